// policy/metadata_view.cc: the view's learning from Metadata answers, KIP-951
// hints, NodeEndpoints and response facts, and copy-on-write publishing (the
// per-partition rules are in epoch_rules.cc, the per-API response adapters in
// response_learning.cc). Must never: move an epoch backwards on one report,
// store a -1 leader or epoch as a hint, or block readers.
#include "policy/metadata_view.h"
#include "policy/replica_set_interner.h"

#include "policy/epoch_dispute.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "policy/epoch_rules.h"
#include "policy/metadata_view_editor.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {

using epoch_rules::apply;
using epoch_rules::doubt;
using epoch_rules::Incoming;
using epoch_rules::needs_refresh;
using epoch_rules::slot;

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
  learned_without_topic_id += o.learned_without_topic_id;
  for (const auto& t : o.urgent_refresh) add_refresh(t);
  for (int32_t n : o.new_nodes)
    if (std::find(new_nodes.begin(), new_nodes.end(), n) == new_nodes.end()) new_nodes.push_back(n);
  published = published || o.published;
}

MetadataView::MetadataView() {
  current_.store(std::make_shared<const MetadataSnapshot>());
}

void MetadataView::set_rollback_confirmations(uint32_t n) {
  rollback_confirmations_.store(std::clamp<uint32_t>(n, 2, UINT16_MAX));
}

namespace {

using ReportedPartition = codec::MetadataResponse::MetadataResponsePartition;

// What a Metadata partition reports, as the epoch rules take it.
int32_t reported_leader(const ReportedPartition& p) { return p.leader_id < 0 ? -1 : p.leader_id; }
int32_t reported_epoch(const ReportedPartition& p, bool has_epochs) {
  return has_epochs && p.leader_epoch >= 0 ? p.leader_epoch : -1;
}
// The entry's replica set is the one `p` reports (so it can be kept, shared).
bool same_replicas(const PartitionEntry& e, const ReportedPartition& p) {
  return e.known && e.replica_set && e.replica_set->replicas == p.replica_nodes &&
         e.replica_set->isr == p.isr_nodes;
}

// A report for a known topic that names every partition's own leader, epoch
// and replica set changes nothing a reader decides by, only when each entry
// was last confirmed. That is what nearly every periodic refresh is, and
// copying the topic (copy-on-write) for it cost 100,000-partition refreshes
// most of their time: instead the entries are stamped in place (their
// learned_at_ms and source are Restamp fields) and no snapshot is published.
// False, with nothing stamped, when any partition would change more (the
// caller then takes the copy-on-write path for the topic).
bool confirm_in_place(const TopicEntry& cur, const codec::MetadataResponse::MetadataResponseTopic& t,
                      const codec::Uuid& id, bool has_epochs, Source source, uint64_t now_ms,
                      LearnReport& rep) {
  if (!is_zero_uuid(id) && cur.id != id) return false;  // a new id: learned, or recreated
  uint32_t confirmed = 0;
  std::vector<const PartitionEntry*> stamp;
  stamp.reserve(t.partitions.size());
  for (const auto& p : t.partitions) {
    if (p.partition_index < 0 || static_cast<size_t>(p.partition_index) >= cur.partitions.size())
      return false;
    const PartitionEntry& e = cur.partitions[static_cast<size_t>(p.partition_index)];
    const int32_t epoch = reported_epoch(p, has_epochs);
    const epoch_rules::Confirmation c =
        epoch_rules::confirmation(e, reported_leader(p), epoch, source);
    if (c == epoch_rules::Confirmation::kNo) return false;
    if (c != epoch_rules::Confirmation::kStamp) continue;
    if (!same_replicas(e, p)) return false;
    stamp.push_back(&e);
    if (epoch >= 0) ++confirmed;
  }
  for (const PartitionEntry* e : stamp) {
    e->learned_at_ms.store(now_ms);
    e->source.store(source);
  }
  rep.leaders_confirmed += confirmed;
  return true;
}

}  // namespace

LearnReport MetadataView::learn_metadata(const codec::MetadataResponse& resp, int16_t version,
                                         uint64_t now_ms, Source source) {
  LearnReport rep;
  // v13 top-level error (e.g. REBOOTSTRAP_REQUIRED): the body says nothing.
  if (version >= 13 && resp.error_code != codec::kErrNone) return rep;
  std::lock_guard lock(write_mu_);
  Editor ed(current_.load(), now_ms);
  const bool has_epochs = version >= 7;
  const bool has_ids = version >= 10;
  ReplicaSetInterner replica_sets;  // partitions with equal lists share one set
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
    if (t.error_code == codec::kErrUnknownTopicOrPartition || t.error_code == codec::kErrUnknownTopicId) {
      if (ed.find(name)) {
        ed.remove(name);
        rep.topics_removed++;
      }
      continue;
    }
    if (t.error_code != codec::kErrNone) continue;  // authorization, invalid topic, creating...

    const TopicEntry* cur = ed.find(name);
    if (cur && confirm_in_place(*cur, t, id, has_epochs, source, now_ms, rep)) continue;
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
      in.leader = reported_leader(p);
      in.epoch = reported_epoch(p, has_epochs);
      if (same_replicas(*e, p)) {
        in.replicas = e->replica_set;  // unchanged: keep sharing it
      } else {
        in.replicas = replica_sets.get(p.replica_nodes, p.isr_nodes);  // shared by content
      }
      in.ids_verified = ids_verified;
      bool advanced = false;
      refresh |= apply(*e, in, source, now_ms, rep, advanced, rollback_confirmations_.load());
    }
    if (!cur && is_zero_uuid(topic.id) && has_epochs && source != Source::kRefresher &&
        !topic.partitions.empty()) {
      rep.learned_without_topic_id++;
      refresh = true;
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
  Editor ed(current_.load(), now_ms);
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

std::vector<std::string> MetadataView::forget_unused_topics(uint64_t now_ms, uint64_t idle_ms) {
  std::vector<std::string> gone;
  std::lock_guard lock(write_mu_);
  auto base = current_.load();
  base->for_each_topic([&](const TopicEntry& t) {
    if (now_ms > t.used_at_ms.load() + idle_ms) gone.push_back(t.name);
  });
  if (gone.empty()) return gone;
  std::sort(gone.begin(), gone.end());
  Editor ed(base, now_ms);
  for (const auto& name : gone) ed.forget(name);
  current_.store(ed.commit(LearnReport{}));
  return gone;
}

LearnReport MetadataView::learn_nodes(const std::vector<NodeInfo>& nodes) {
  LearnReport rep;
  std::lock_guard lock(write_mu_);
  Editor ed(current_.load(), 0);  // creates no topic
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

bool MetadataView::interesting(const MetadataSnapshot& snap, std::string_view name,
                               const codec::Uuid& id, const detail::ResponseFact& f,
                               bool leader_only_api, int32_t target_node) const {
  if (f.hint_leader >= 0 && f.hint_epoch >= 0) return true;
  if (f.error_code != codec::kErrNone) return needs_refresh(f.error_code);
  return leader_only_api && success_is_news(snap, name, id, f.partition, target_node);
}

bool MetadataView::success_is_news(const MetadataSnapshot& snap, std::string_view name,
                                   const codec::Uuid& id, int32_t partition, int32_t target_node) {
  if (target_node < 0) return false;
  const PartitionEntry* e =
      !name.empty() ? snap.find_partition(name, partition) : snap.find_partition(id, partition);
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
  Editor ed(current_.load(), now_ms);
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
    if (f.error_code != codec::kErrNone) {
      if (!advanced) {
        rep.add_refresh(ref);
        const TopicEntry* now_t = ed.find(name);
        const PartitionEntry* e = now_t ? now_t->partition(f.partition) : nullptr;
        // The broker the view calls leader says it is not: the view is wrong.
        if (f.error_code == codec::kErrNotLeaderOrFollower && target_node >= 0 && e && !e->suspect() &&
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

}  // namespace epochgate::policy
