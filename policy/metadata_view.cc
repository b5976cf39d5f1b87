// policy/metadata_view.cc: the learning rules of the view (DESIGN.md section 5,
// invariant 6) and copy-on-write publishing. Must never: move an epoch
// backwards on one report, store a -1 leader or epoch as a hint, or block
// readers.
#include "policy/metadata_view.h"

#include <algorithm>
#include <unordered_map>

namespace epochgate::policy {
namespace {

constexpr int16_t kNone = 0;
constexpr int16_t kUnknownTopicOrPartition = 3;
constexpr int16_t kLeaderNotAvailable = 5;
constexpr int16_t kNotLeaderOrFollower = 6;
constexpr int16_t kFencedLeaderEpoch = 74;
constexpr int16_t kUnknownLeaderEpoch = 75;
constexpr int16_t kUnknownTopicId = 100;

// A partition index beyond this is not believed (it would make the view
// allocate a huge slot vector); Kafka topics stay far below it.
constexpr int32_t kMaxPartitionIndex = 1 << 20;

bool needs_refresh(int16_t error) {
  return error == kNotLeaderOrFollower || error == kFencedLeaderEpoch ||
         error == kUnknownLeaderEpoch || error == kUnknownTopicOrPartition ||
         error == kUnknownTopicId || error == kLeaderNotAvailable;
}

}  // namespace

void LearnReport::add_refresh(const TopicRef& t) {
  // A set beside the list: scanning the list made a Produce response naming
  // 50,000 unknown topics hold the worker's loop for 25 s.
  std::string key = t.name;
  key.append(reinterpret_cast<const char*>(t.id.data()), t.id.size());
  if (refresh_seen_.insert(std::move(key)).second) urgent_refresh.push_back(t);
}

void LearnReport::merge(const LearnReport& o) {
  partitions_learned += o.partitions_learned;
  epochs_advanced += o.epochs_advanced;
  leaders_confirmed += o.leaders_confirmed;
  stale_ignored += o.stale_ignored;
  marked_suspect += o.marked_suspect;
  hints_learned += o.hints_learned;
  topics_recreated += o.topics_recreated;
  topics_removed += o.topics_removed;
  epochs_disputed += o.epochs_disputed;
  epochs_rolled_back += o.epochs_rolled_back;
  learned_without_epoch += o.learned_without_epoch;
  for (const auto& t : o.urgent_refresh) add_refresh(t);
  for (int32_t n : o.new_nodes)
    if (std::find(new_nodes.begin(), new_nodes.end(), n) == new_nodes.end()) new_nodes.push_back(n);
  published = published || o.published;
}

/// One write transaction: edits are made on private copies of the touched
/// topics; commit() builds the next snapshot sharing everything else.
class MetadataView::Editor {
 public:
  explicit Editor(std::shared_ptr<const MetadataSnapshot> base) : base_(std::move(base)) {}

  /// Current content of a topic (edited copy or base), or nullptr.
  const TopicEntry* find(std::string_view name) const {
    auto it = dirty_.find(std::string(name));
    if (it != dirty_.end()) return it->second.get();
    return base_->find_topic(name);
  }
  /// The name of the topic with `id`, looking at edits first; "" if unknown.
  std::string name_of(const codec::Uuid& id) const {
    if (is_zero_uuid(id)) return {};
    for (const auto& [name, t] : dirty_)
      if (t && t->id == id) return name;
    const TopicEntry* t = base_->find_topic(id);
    if (!t) return {};
    // The base may map the id to a topic that was since edited to a new id.
    const TopicEntry* now = find(t->name);
    return now && now->id == id ? t->name : std::string();
  }

  /// A private, writable copy of topic `name` (created empty if absent).
  TopicEntry& edit(const std::string& name) {
    auto it = dirty_.find(name);
    if (it != dirty_.end() && it->second) return *it->second;
    const TopicEntry* cur = base_->find_topic(name);
    auto copy = cur && it == dirty_.end() ? std::make_shared<TopicEntry>(*cur)
                                          : std::make_shared<TopicEntry>();
    copy->name = name;
    TopicEntry& ref = *copy;
    dirty_[name] = std::move(copy);
    return ref;
  }
  void remove(const std::string& name) {
    if (find(name)) dirty_[name] = nullptr;
  }

  std::map<int32_t, NodeInfo>& edit_nodes() {
    if (!nodes_) nodes_ = std::make_shared<std::map<int32_t, NodeInfo>>(base_->nodes());
    return *nodes_;
  }
  const std::map<int32_t, NodeInfo>& nodes() const { return nodes_ ? *nodes_ : base_->nodes(); }

  bool changed() const { return !dirty_.empty() || nodes_changed_; }
  void mark_nodes_changed() { nodes_changed_ = true; }

  /// The next snapshot; `rep` is this transaction's report (its dispute and
  /// rollback counts are added to the snapshot's totals).
  std::shared_ptr<const MetadataSnapshot> commit(const LearnReport& rep) {
    auto next = std::make_shared<MetadataSnapshot>(*base_);
    next->generation_ = base_->generation_ + 1;
    next->epoch_disputes_total_ += rep.epochs_disputed;
    next->epoch_rollbacks_total_ += rep.epochs_rolled_back;
    std::array<std::shared_ptr<MetadataSnapshot::NameShard>, MetadataSnapshot::kShards> names;
    std::array<std::shared_ptr<MetadataSnapshot::IdShard>, MetadataSnapshot::kShards> ids;
    auto name_shard = [&](std::string_view n) -> MetadataSnapshot::NameShard& {
      size_t s = MetadataSnapshot::shard_of(n);
      if (!names[s]) {
        names[s] = std::make_shared<MetadataSnapshot::NameShard>(*base_->by_name_[s]);
        next->by_name_[s] = names[s];
      }
      return *names[s];
    };
    auto id_shard = [&](const codec::Uuid& id) -> MetadataSnapshot::IdShard& {
      size_t s = MetadataSnapshot::shard_of(id);
      if (!ids[s]) {
        ids[s] = std::make_shared<MetadataSnapshot::IdShard>(*base_->by_id_[s]);
        next->by_id_[s] = ids[s];
      }
      return *ids[s];
    };
    for (auto& [name, topic] : dirty_) {
      const TopicEntry* old = base_->find_topic(name);
      if (old) {
        next->partition_count_ -= old->known_partitions();
        next->topic_count_ -= 1;
        if (!is_zero_uuid(old->id)) {
          auto& shard = id_shard(old->id);
          auto it = shard.find(old->id);
          if (it != shard.end() && it->second->name == name) shard.erase(it);
        }
        name_shard(name).erase(name);
      }
      if (!topic) continue;
      MetadataSnapshot::TopicPtr ptr = topic;
      next->partition_count_ += topic->known_partitions();
      next->topic_count_ += 1;
      name_shard(name)[name] = ptr;
      if (!is_zero_uuid(topic->id)) id_shard(topic->id)[topic->id] = ptr;
    }
    if (nodes_) next->nodes_ = std::move(nodes_);
    return next;
  }

 private:
  std::shared_ptr<const MetadataSnapshot> base_;
  std::unordered_map<std::string, std::shared_ptr<TopicEntry>> dirty_;  // null: removed
  std::shared_ptr<std::map<int32_t, NodeInfo>> nodes_;
  bool nodes_changed_ = false;
};

namespace {

/// One report about one partition.
struct Incoming {
  int32_t leader = -1;
  int32_t epoch = -1;                          ///< -1: the report carries no epoch
  std::shared_ptr<const ReplicaSet> replicas;  ///< null: the report has none
  /// The report and the view name the topic with the same non-zero id, so a
  /// lower epoch is a lagging broker, not a recreated topic.
  bool ids_verified = false;
};

PartitionEntry* slot(TopicEntry& t, int32_t partition) {
  if (partition < 0 || partition > kMaxPartitionIndex) return nullptr;
  if (static_cast<size_t>(partition) >= t.partitions.size())
    t.partitions.resize(static_cast<size_t>(partition) + 1);
  return &t.partitions[static_cast<size_t>(partition)];
}

void doubt(PartitionEntry& e, LearnReport& rep) {
  if (!e.suspect()) rep.marked_suspect++;
  e.doubted = true;
}

uint16_t saturating_inc(uint16_t v) {
  return v == UINT16_MAX ? v : static_cast<uint16_t>(v + 1);
}

/// A report with a lower epoch than the entry's, for the same topic id: a
/// lagging broker, or the entry's epoch is bogus (one answer from a dying
/// broker or an unclean election). Tallies it; repeated reports stop the
/// entry's fencing, `needed` reports naming one (leader, epoch) replace the
/// entry with it. Returns true while the topic should be refreshed to gather
/// the confirmations that settle it.
bool note_lower(PartitionEntry& e, const Incoming& in, Source src, uint64_t now_ms, uint32_t needed,
                LearnReport& rep) {
  auto& l = e.lower;
  const bool was_suspect = e.suspect();
  const bool was_disputed = e.disputed();
  l.reports = saturating_inc(l.reports);
  if (in.epoch > l.epoch || (in.epoch == l.epoch && in.leader != l.leader)) {
    l.epoch = in.epoch;
    l.leader = in.leader;
    l.agreeing = 1;
  } else if (in.epoch == l.epoch) {
    l.agreeing = saturating_inc(l.agreeing);
  }  // else: older than the candidate too; it only counts against the entry
  if (!was_disputed && e.disputed()) {
    rep.epochs_disputed++;
    if (!was_suspect) rep.marked_suspect++;
  }
  if (l.agreeing < needed) return true;
  const int32_t from = e.leader_epoch;
  e.leader_id = l.leader;
  e.leader_epoch = l.epoch;
  e.conflicted = false;
  e.doubted = false;
  e.learned_at_ms = now_ms;
  e.changed_at_ms = now_ms;
  e.source = src;
  if (in.replicas) e.replica_set = in.replicas;
  e.lower = {};
  e.rollbacks = saturating_inc(e.rollbacks);
  e.rolled_back_from = from;
  e.rolled_back_at_ms = now_ms;
  rep.epochs_rolled_back++;
  return false;
}

/// The epoch rules. Returns true when the topic should be refreshed urgently.
/// Sets `advanced` when the entry's epoch moved forward. `rollback_needed`:
/// lower reports of one (leader, epoch) that replace the entry (>= 2).
bool apply(PartitionEntry& e, const Incoming& in, Source src, uint64_t now_ms, LearnReport& rep,
           bool& advanced, uint32_t rollback_needed) {
  advanced = false;
  if (!e.known) {
    e = PartitionEntry{};
    e.known = true;
    e.leader_id = in.leader;
    e.leader_epoch = in.epoch;
    e.learned_at_ms = now_ms;
    // changed_at_ms stays 0: a first sighting is no evidence of a move.
    e.source = src;
    e.replica_set = in.replicas;
    rep.partitions_learned++;
    // A leader without an epoch (an old client's Metadata) cannot fence: have
    // the refresher, at epochgate's own version, learn the epoch now rather
    // than at the next periodic refresh.
    if (in.epoch < 0 && in.leader >= 0 && src != Source::kRefresher) {
      rep.learned_without_epoch++;
      return true;
    }
    return false;
  }
  if (in.epoch >= 0) {
    if (e.leader_epoch < 0 || in.epoch > e.leader_epoch) {
      e.leader_id = in.leader;
      e.leader_epoch = in.epoch;
      e.conflicted = false;
      e.doubted = false;
      e.lower = {};
      e.learned_at_ms = now_ms;
      e.changed_at_ms = now_ms;
      e.source = src;
      if (in.replicas) e.replica_set = in.replicas;
      rep.epochs_advanced++;
      advanced = true;
      return false;
    }
    if (in.epoch == e.leader_epoch) {
      if (in.leader == e.leader_id || e.leader_id < 0) {
        // Agreement (or a leader reappearing at the epoch the view saw
        // without one): the entry is current again.
        e.leader_id = in.leader;
        e.learned_at_ms = now_ms;
        e.source = src;
        if (in.replicas) e.replica_set = in.replicas;
        if (src == Source::kRefresher) {
          if (e.doubted && !e.conflicted) e.doubted = false;
          // The cluster, asked directly, still says this epoch: earlier lower
          // reports were lagging brokers.
          e.lower = {};
        }
        rep.leaders_confirmed++;
        return false;
      }
      if (in.leader < 0) {
        // Same epoch, no leader: the leader is not reachable on that broker's
        // listener. Keep the leader, stop fencing on it until confirmed.
        doubt(e, rep);
        return true;
      }
      // Same epoch, two leaders: neither may be told to a client.
      if (!e.suspect()) rep.marked_suspect++;
      e.conflicted = true;
      e.leader_id = in.leader;
      e.learned_at_ms = now_ms;
      e.changed_at_ms = now_ms;
      e.source = src;
      if (in.replicas) e.replica_set = in.replicas;
      return true;
    }
    rep.stale_ignored++;
    if (!in.ids_verified) {
      // Lower epoch and no topic ids to tell a lagging broker from a
      // recreated topic: stop fencing until a refresh (with ids) decides.
      doubt(e, rep);
      return true;
    }
    return note_lower(e, in, src, now_ms, rollback_needed, rep);
  }
  // The report has no epoch (Metadata < v7, or a leaderless -1/-1).
  if (e.leader_epoch < 0) {
    // Neither side has an epoch: nothing to order by, keep the latest. Such
    // an entry never fences.
    const bool moved = e.leader_id != in.leader;
    if (moved) e.changed_at_ms = now_ms;
    e.leader_id = in.leader;
    e.learned_at_ms = now_ms;
    e.source = src;
    if (in.replicas) e.replica_set = in.replicas;
    // An old client saw the leader move: learn the epoch that lets the view
    // fence writes still aimed at the old leader.
    if (moved && in.leader >= 0 && src != Source::kRefresher) {
      rep.learned_without_epoch++;
      return true;
    }
    return false;
  }
  if (in.leader == e.leader_id) return false;  // consistent, but too weak to reset the age
  doubt(e, rep);
  return true;
}

}  // namespace

MetadataView::MetadataView() {
  current_.store(std::make_shared<const MetadataSnapshot>());
}

void MetadataView::set_rollback_confirmations(uint32_t n) {
  rollback_confirmations_.store(std::clamp<uint32_t>(n, 2, UINT16_MAX));
}

LearnReport MetadataView::learn_metadata(const codec::MetadataResponse& resp, int16_t version,
                                         uint64_t now_ms, Source source) {
  LearnReport rep;
  // v13 top-level error (e.g. REBOOTSTRAP_REQUIRED): the body says nothing.
  if (version >= 13 && resp.error_code != kNone) return rep;
  std::lock_guard lock(write_mu_);
  Editor ed(current_.load());
  const bool has_epochs = version >= 7;
  const bool has_ids = version >= 10;

  for (const auto& b : resp.brokers) {
    const auto& nodes = ed.nodes();
    auto it = nodes.find(b.node_id);
    NodeInfo info{b.node_id, b.host, b.port, b.rack};
    if (it == nodes.end()) {
      ed.edit_nodes()[b.node_id] = info;
      ed.mark_nodes_changed();
      rep.new_nodes.push_back(b.node_id);
    } else if (!(it->second == info)) {
      ed.edit_nodes()[b.node_id] = info;
      ed.mark_nodes_changed();
    }
  }

  for (const auto& t : resp.topics) {
    codec::Uuid id = has_ids ? t.topic_id : codec::Uuid{};
    std::string name = t.name && !t.name->empty() ? *t.name : ed.name_of(id);
    if (name.empty()) {
      if (!is_zero_uuid(id)) rep.add_refresh(TopicRef{"", id});
      continue;
    }
    if (t.error_code == kUnknownTopicOrPartition || t.error_code == kUnknownTopicId) {
      if (ed.find(name)) {
        ed.remove(name);
        rep.topics_removed++;
      }
      continue;
    }
    if (t.error_code != kNone) continue;  // authorization, invalid topic, creating...

    const TopicEntry* cur = ed.find(name);
    TopicEntry& topic = ed.edit(name);
    bool ids_verified = false;
    if (!is_zero_uuid(id)) {
      if (cur && !is_zero_uuid(cur->id) && cur->id != id) {
        // Recreated: a new incarnation, its epochs start again.
        topic.partitions.clear();
        rep.topics_recreated++;
      }
      ids_verified = cur && cur->id == id;
      topic.id = id;
    }
    bool refresh = false;
    for (const auto& p : t.partitions) {
      PartitionEntry* e = slot(topic, p.partition_index);
      if (!e) continue;
      Incoming in;
      in.leader = p.leader_id < 0 ? -1 : p.leader_id;
      in.epoch = has_epochs && p.leader_epoch >= 0 ? p.leader_epoch : -1;
      if (e->known && e->replica_set && e->replica_set->replicas == p.replica_nodes &&
          e->replica_set->isr == p.isr_nodes) {
        in.replicas = e->replica_set;  // unchanged: keep sharing it
      } else {
        auto rs = std::make_shared<ReplicaSet>();
        rs->replicas = p.replica_nodes;
        rs->isr = p.isr_nodes;
        in.replicas = std::move(rs);
      }
      in.ids_verified = ids_verified;
      bool advanced = false;
      refresh |= apply(*e, in, source, now_ms, rep, advanced, rollback_confirmations_.load());
    }
    if (refresh) rep.add_refresh(TopicRef{name, topic.id});
  }

  if (ed.changed()) {
    current_.store(ed.commit(rep));
    rep.published = true;
  }
  return rep;
}

LearnReport MetadataView::learn_current_leader(const TopicRef& topic, int32_t partition,
                                               int32_t leader_id, int32_t leader_epoch,
                                               uint64_t now_ms, Source source) {
  LearnReport rep;
  if (leader_id < 0 || leader_epoch < 0) return rep;
  std::lock_guard lock(write_mu_);
  Editor ed(current_.load());
  std::string name = !topic.name.empty() ? topic.name : ed.name_of(topic.id);
  if (name.empty()) {
    rep.add_refresh(topic);
    return rep;
  }
  const TopicEntry* cur = ed.find(name);
  if (cur && !is_zero_uuid(topic.id) && !is_zero_uuid(cur->id) && cur->id != topic.id) {
    // The hint is about another incarnation of the topic than the view's.
    rep.add_refresh(TopicRef{name, topic.id});
    return rep;
  }
  TopicEntry& t = ed.edit(name);
  PartitionEntry* e = slot(t, partition);
  if (e) {
    Incoming in;
    in.leader = leader_id;
    in.epoch = leader_epoch;
    in.ids_verified = !is_zero_uuid(topic.id) && t.id == topic.id;
    bool advanced = false;
    if (apply(*e, in, source, now_ms, rep, advanced, rollback_confirmations_.load()))
      rep.add_refresh(TopicRef{name, t.id});
    if (advanced) rep.hints_learned++;
  }
  if (ed.changed()) {
    current_.store(ed.commit(rep));
    rep.published = true;
  }
  return rep;
}

LearnReport MetadataView::learn_nodes(const std::vector<NodeInfo>& nodes) {
  LearnReport rep;
  std::lock_guard lock(write_mu_);
  Editor ed(current_.load());
  for (const auto& n : nodes) {
    if (n.node_id < 0) continue;
    const auto& cur = ed.nodes();
    auto it = cur.find(n.node_id);
    if (it == cur.end()) {
      rep.new_nodes.push_back(n.node_id);
    } else if (it->second == n) {
      continue;
    }
    ed.edit_nodes()[n.node_id] = n;
    ed.mark_nodes_changed();
  }
  if (ed.changed()) {
    current_.store(ed.commit(rep));
    rep.published = true;
  }
  return rep;
}

bool MetadataView::interesting(const MetadataSnapshot& snap, const detail::ResponseFact& f,
                               bool leader_only_api, int32_t target_node) const {
  if (f.hint_leader >= 0 && f.hint_epoch >= 0) return true;
  if (f.error_code != kNone) return needs_refresh(f.error_code);
  if (!leader_only_api || target_node < 0) return false;
  const PartitionEntry* e = !f.topic.name.empty() ? snap.find_partition(f.topic.name, f.partition)
                                                  : snap.find_partition(f.topic.id, f.partition);
  // Success from a broker the view does not call leader: the view may be behind.
  return e && e->hintable() && e->leader_id != target_node;
}

LearnReport MetadataView::learn_facts(const std::vector<detail::ResponseFact>& facts,
                                      const std::vector<NodeInfo>& nodes, bool leader_only_api,
                                      int32_t target_node, uint64_t now_ms) {
  LearnReport rep;
  if (!nodes.empty()) rep.merge(learn_nodes(nodes));
  if (facts.empty()) return rep;
  std::lock_guard lock(write_mu_);
  Editor ed(current_.load());
  for (const auto& f : facts) {
    std::string name = !f.topic.name.empty() ? f.topic.name : ed.name_of(f.topic.id);
    TopicRef ref{name, f.topic.id};
    if (name.empty()) {
      rep.add_refresh(f.topic);
      continue;
    }
    const TopicEntry* cur = ed.find(name);
    if (cur && is_zero_uuid(ref.id)) ref.id = cur->id;
    const bool other_incarnation =
        cur && !is_zero_uuid(f.topic.id) && !is_zero_uuid(cur->id) && cur->id != f.topic.id;
    if (other_incarnation) {
      rep.add_refresh(ref);
      continue;
    }
    bool advanced = false;
    if (f.hint_leader >= 0 && f.hint_epoch >= 0) {
      TopicEntry& t = ed.edit(name);
      if (PartitionEntry* e = slot(t, f.partition)) {
        Incoming in;
        in.leader = f.hint_leader;
        in.epoch = f.hint_epoch;
        in.ids_verified = !is_zero_uuid(f.topic.id) && t.id == f.topic.id;
        if (apply(*e, in, Source::kHint, now_ms, rep, advanced, rollback_confirmations_.load()))
          rep.add_refresh(ref);
        if (advanced) rep.hints_learned++;
      }
    }
    if (f.error_code != kNone) {
      if (!advanced) {
        rep.add_refresh(ref);
        const TopicEntry* now_t = ed.find(name);
        const PartitionEntry* e = now_t ? now_t->partition(f.partition) : nullptr;
        // The broker the view calls leader says it is not: the view is wrong.
        if (f.error_code == kNotLeaderOrFollower && target_node >= 0 && e && !e->suspect() &&
            e->leader_id == target_node) {
          PartitionEntry* w = slot(ed.edit(name), f.partition);
          doubt(*w, rep);
          w->source = Source::kError;
        }
      }
    } else if (leader_only_api && target_node >= 0 && !advanced) {
      const PartitionEntry* e = cur ? cur->partition(f.partition) : nullptr;
      if (e && e->hintable() && e->leader_id != target_node) rep.add_refresh(ref);
    }
  }
  if (ed.changed()) {
    current_.store(ed.commit(rep));
    rep.published = true;
  }
  return rep;
}

namespace {

template <class NodeEndpointT>
void collect_nodes(const std::vector<NodeEndpointT>& in, std::vector<NodeInfo>& out) {
  for (const auto& n : in) out.push_back(NodeInfo{n.node_id, n.host, n.port, n.rack});
}

}  // namespace

LearnReport MetadataView::learn_from_produce_response(const codec::ProduceResponse& resp,
                                                      int16_t version, int32_t target_node,
                                                      uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  std::vector<NodeInfo> nodes;
  if (version >= 10 && resp.node_endpoints) collect_nodes(*resp.node_endpoints, nodes);
  for (const auto& t : resp.responses) {
    TopicRef ref = version >= 13 ? TopicRef{"", t.topic_id} : TopicRef{t.name, {}};
    for (const auto& p : t.partition_responses) {
      detail::ResponseFact f{ref, p.index, p.error_code, -1, -1};
      if (version >= 10 && p.current_leader) {
        f.hint_leader = p.current_leader->leader_id;
        f.hint_epoch = p.current_leader->leader_epoch;
      }
      if (interesting(*snap, f, true, target_node)) facts.push_back(std::move(f));
    }
  }
  return learn_facts(facts, nodes, true, target_node, now_ms);
}

LearnReport MetadataView::learn_from_fetch_response(const codec::FetchResponse& resp,
                                                    int16_t version, int32_t target_node,
                                                    uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  std::vector<NodeInfo> nodes;
  if (version >= 16 && resp.node_endpoints) collect_nodes(*resp.node_endpoints, nodes);
  for (const auto& t : resp.responses) {
    TopicRef ref = version >= 13 ? TopicRef{"", t.topic_id} : TopicRef{t.topic, {}};
    for (const auto& p : t.partitions) {
      detail::ResponseFact f{ref, p.partition_index, p.error_code, -1, -1};
      if (version >= 12 && p.current_leader) {
        f.hint_leader = p.current_leader->leader_id;
        f.hint_epoch = p.current_leader->leader_epoch;
      }
      // Fetch to a follower is legal (KIP-392): successes say nothing.
      if (interesting(*snap, f, false, target_node)) facts.push_back(std::move(f));
    }
  }
  return learn_facts(facts, nodes, false, target_node, now_ms);
}

namespace {

template <class Resp>
void collect_share(const Resp& resp, std::vector<detail::ResponseFact>& all,
                   std::vector<NodeInfo>& nodes) {
  collect_nodes(resp.node_endpoints, nodes);
  for (const auto& t : resp.responses) {
    for (const auto& p : t.partitions) {
      all.push_back(detail::ResponseFact{TopicRef{"", t.topic_id}, p.partition_index, p.error_code,
                                         p.current_leader.leader_id,
                                         p.current_leader.leader_epoch});
    }
  }
}

}  // namespace

LearnReport MetadataView::learn_from_share_fetch_response(const codec::ShareFetchResponse& resp,
                                                          int16_t version, int32_t target_node,
                                                          uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> all, facts;
  std::vector<NodeInfo> nodes;
  collect_share(resp, all, nodes);
  for (auto& f : all)
    if (interesting(*snap, f, true, target_node)) facts.push_back(std::move(f));
  return learn_facts(facts, nodes, true, target_node, now_ms);
}

LearnReport MetadataView::learn_from_share_acknowledge_response(
    const codec::ShareAcknowledgeResponse& resp, int16_t version, int32_t target_node,
    uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> all, facts;
  std::vector<NodeInfo> nodes;
  collect_share(resp, all, nodes);
  for (auto& f : all)
    if (interesting(*snap, f, true, target_node)) facts.push_back(std::move(f));
  return learn_facts(facts, nodes, true, target_node, now_ms);
}

LearnReport MetadataView::learn_from_list_offsets_response(const codec::ListOffsetsResponse& resp,
                                                           int16_t version, int32_t target_node,
                                                           uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions) {
      detail::ResponseFact f{TopicRef{t.name, {}}, p.partition_index, p.error_code, -1, -1};
      if (interesting(*snap, f, false, target_node)) facts.push_back(std::move(f));
    }
  return learn_facts(facts, {}, false, target_node, now_ms);
}

LearnReport MetadataView::learn_from_offset_for_leader_epoch_response(
    const codec::OffsetForLeaderEpochResponse& resp, int16_t version, int32_t target_node,
    uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions) {
      detail::ResponseFact f{TopicRef{t.topic, {}}, p.partition, p.error_code, -1, -1};
      if (interesting(*snap, f, false, target_node)) facts.push_back(std::move(f));
    }
  return learn_facts(facts, {}, false, target_node, now_ms);
}

}  // namespace epochgate::policy
