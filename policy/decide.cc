// policy/decide.cc: the decision table. One generic walker (TableWalker)
// applies the per-partition rules; where each API's topics, partitions and
// epochs are comes from the generated partition shapes, which rows apply from
// the schema row's rule (codec/schema/api_keys.schema). Must never: allocate per partition beyond the
// output vector, fence on ignorance, or fence a Produce with FENCED_LEADER_EPOCH.
#include "policy/decide.h"

#include <iterator>
#include <string>
#include <string_view>
#include <unordered_set>

#include "codec/messages/api_traits.h"
#include "codec/produce_head.h"
#include "policy/shape_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {

namespace {

// Names in enum order (policy/decision.h); "unknown" past the end.
constexpr const char* kVerdictNames[] = {"pass", "fence", "inject", "pass_and_refresh", "hold"};
constexpr const char* kReasonNames[] = {
    "none",      "stale_epoch", "not_leader", "not_replica", "injected",  "view_behind",
    "unknown_partition", "stale_view", "suspect", "no_leader", "no_epoch", "replica_request"};
constexpr const char* kActionNames[] = {"forward_as_is",  "forward_rewritten", "answer_locally",
                                        "split",          "close_connection",  "hold"};

static_assert(std::size(kVerdictNames) == static_cast<size_t>(Verdict::kHold) + 1);
static_assert(std::size(kReasonNames) == static_cast<size_t>(Reason::kReplicaRequest) + 1);
static_assert(std::size(kActionNames) == static_cast<size_t>(Action::kHold) + 1);

template <size_t N, class E>
const char* name_of(const char* const (&names)[N], E e) {
  const auto i = static_cast<size_t>(e);
  return i < N ? names[i] : "unknown";
}

}  // namespace

const char* verdict_name(Verdict v) { return name_of(kVerdictNames, v); }
const char* reason_name(Reason r) { return name_of(kReasonNames, r); }
const char* action_name(Action a) { return name_of(kActionNames, a); }

void RequestDecision::clear() {
  api_key = -1;
  version = -1;
  action = Action::kForwardAsIs;
  partitions.clear();
  topic_start.clear();
  urgent_refresh.clear();
  fenced = observed_fences = injected = held = 0;
  hold_timeout_ms = 0;
}

bool policy_decides(int16_t api_key, int16_t version) {
  const codec::ApiInfo* a = codec::api_info(api_key);
  return a != nullptr && a->decided.contains(version);
}

namespace {

/// Which rows of the table apply to an API.
enum class Check : uint8_t {
  kFetch,      ///< epoch rows + "not leader and not a replica"
  kEpochOnly,  ///< ListOffsets v4+, OffsetForLeaderEpoch v2+: epoch rows
  kLeader,     ///< Produce, ShareFetch, ShareAcknowledge: b != L
  kPersister,  ///< Read/WriteShareGroupState: LeaderEpoch < e_v, no hint, no injection
  kNothing,    ///< versions without an epoch and APIs without rows
};

class TableWalker {
 public:
  TableWalker(const DecideContext& ctx, RequestDecision& out, int16_t api_key, int16_t version,
              ApiGroup group, Check check, bool may_inject, bool follower_may_serve)
      : ctx_(ctx),
        out_(out),
        group_(group),
        check_(check),
        may_inject_(may_inject),
        follower_may_serve_(follower_may_serve) {
    out_.clear();
    out_.api_key = api_key;
    out_.version = version;
    out_.group = group;
  }

  /// Starts topic `index` of the request, named by `name` (may be empty) or `id`.
  void begin_topic(std::string_view name, const codec::Uuid& id) {
    out_.topic_start.push_back(static_cast<uint32_t>(out_.partitions.size()));
    topic_ = !name.empty() ? ctx_.view.find_topic(name) : ctx_.view.find_topic(id);
    if (topic_) topic_->mark_used(ctx_.now_ms);  // keeps it in the view (topic_idle_ms)
    std::string_view mode_name =
        !name.empty() ? name : (topic_ ? std::string_view(topic_->name) : std::string_view());
    mode_ = ctx_.policy.modes.resolve(mode_name, group_);
    topic_name_ = name;
    topic_id_ = &id;
    topic_refresh_ = false;
  }

  /// One partition: its indexes in the request, number, and request epoch
  /// (-1 when the version has none or the client sent none).
  void partition(uint32_t ti, uint32_t pi, int32_t partition, int32_t e_c) {
    PartitionDecision& d = out_.partitions.emplace_back();
    d.topic_index = ti;
    d.partition_index = pi;
    d.partition = partition;
    d.mode = mode_;
    d.request_epoch = e_c;
    if (mode_ == config::Mode::kOff || check_ == Check::kNothing) return;
    decide_one(d, e_c);
  }

  void end_topic() {
    if (!topic_refresh_) return;
    TopicRef ref;
    if (topic_) {
      ref.name = topic_->name;
      ref.id = topic_->id;
    } else {
      ref.name = std::string(topic_name_);
      ref.id = *topic_id_;
    }
    // A set, not a scan of the list: a request naming 50,000 unknown topics
    // made the scan hold this worker's loop for 40 s.
    std::string key = ref.name;
    key.append(reinterpret_cast<const char*>(ref.id.data()), ref.id.size());
    if (!refresh_seen_.insert(std::move(key)).second) return;
    out_.urgent_refresh.push_back(std::move(ref));
  }

  /// Closes the request and picks the action. `acks_zero`: a Produce whose
  /// client expects no response. `broker_session`: the request moves a
  /// broker-side share session on (KIP-932 ShareSessionEpoch), so even a fully
  /// fenced one is forwarded (without its partitions) and the answers merged:
  /// a broker that never saw an epoch answers the next one with
  /// SHARE_SESSION_NOT_FOUND or INVALID_SHARE_SESSION_EPOCH.
  void finish(bool acks_zero, bool broker_session) {
    out_.topic_start.push_back(static_cast<uint32_t>(out_.partitions.size()));
    const size_t total = out_.partitions.size();
    if (out_.held > 0) {
      out_.action = Action::kHold;
      out_.hold_timeout_ms = ctx_.policy.hold_timeout_ms;
    } else if (out_.fenced > 0 && acks_zero) {
      out_.action = Action::kCloseConnection;
    } else if (out_.fenced > 0 && out_.fenced == total && !broker_session) {
      out_.action = Action::kAnswerLocally;
    } else if (out_.fenced > 0) {
      out_.action = Action::kSplit;
    } else if (out_.injected > 0) {
      out_.action = Action::kForwardRewritten;
    } else {
      out_.action = Action::kForwardAsIs;
    }
  }

 private:
  void refresh(PartitionDecision& d, Reason why) {
    d.verdict = Verdict::kPassAndRefresh;
    d.reason = why;
    topic_refresh_ = true;
  }

  /// A request that disagrees with the view. Holds first (enforce only) when
  /// the entry is older than refresh_before_fence_ms (leadership: since it
  /// last changed), else fences.
  void mismatch(PartitionDecision& d, const PartitionEntry& e, int16_t error, Reason why,
                bool may_hint) {
    d.error_code = error;
    d.reason = why;
    if (may_hint && e.leader_id >= 0 && e.leader_epoch > d.request_epoch) {
      d.hint_leader = e.leader_id;
      d.hint_epoch = e.leader_epoch;
    }
    const bool enforce = d.mode == config::Mode::kEnforce;
    // A leadership mismatch carries no epoch to prove the client is behind:
    // the view may be the one behind (the leader moved to this broker and the
    // client heard first). Fence at once only when the view saw the leader
    // change recently; otherwise refresh first. An epoch mismatch proves the
    // client is behind, so only an old (unconfirmed) entry waits.
    const bool leadership = why == Reason::kNotLeader || why == Reason::kNotReplica;
    const uint64_t age = leadership ? e.changed_age_ms(ctx_.now_ms) : e.age_ms(ctx_.now_ms);
    if (enforce && ctx_.allow_hold && age > ctx_.policy.refresh_before_fence_ms) {
      d.verdict = Verdict::kHold;
      topic_refresh_ = true;
      ++out_.held;
      return;
    }
    d.verdict = Verdict::kFence;
    if (enforce)
      ++out_.fenced;
    else
      ++out_.observed_fences;
  }

  void decide_one(PartitionDecision& d, int32_t e_c) {
    const PartitionEntry* e = topic_ ? topic_->partition(d.partition) : nullptr;
    if (!e) return refresh(d, Reason::kUnknownPartition);
    d.view_epoch = e->leader_epoch;
    if (e->age_ms(ctx_.now_ms) > ctx_.policy.max_staleness_ms)
      return refresh(d, Reason::kStaleView);
    if (e->suspect()) return refresh(d, Reason::kSuspect);
    if (e->leader_epoch < 0) {
      // Never fence on an entry without an epoch: nothing orders it against
      // what the client knows (Metadata < v7, leaderless -1/-1).
      return refresh(d, e->leader_id < 0 ? Reason::kNoLeader : Reason::kNoEpoch);
    }
    const int32_t e_v = e->leader_epoch;
    const int32_t target = ctx_.target_node;
    switch (check_) {
      case Check::kFetch:
      case Check::kEpochOnly:
      case Check::kPersister: {
        if (e_c > e_v) return refresh(d, Reason::kViewBehind);
        if (e_c >= 0 && e_c < e_v) {
          return mismatch(d, *e, codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch,
                          check_ != Check::kPersister);
        }
        if (check_ == Check::kFetch && target >= 0 && e->leader_id >= 0 && target != e->leader_id &&
            e->replica_set && !e->is_replica(target)) {
          return mismatch(d, *e, codec::kErrNotLeaderOrFollower, Reason::kNotReplica, true);
        }
        // A fetch the broker may serve from any replica (KIP-392) gets an
        // epoch only when aimed at a replica the view says follows: there it
        // refuses a deposed leader that still believes it leads, the one
        // broker the injection guards against. Aimed at the view's leader it
        // guards nothing (a follower at the view's epoch serves as well) and
        // only turns the view's lag (the broker answers FENCED, also to a
        // fetch parked when the leader moved) or the broker's (UNKNOWN) into
        // an error a direct client never sees; KafkaJS rejoins its group on
        // it. Before v11 the broker itself refuses an epoch-less fetch
        // anywhere but at the leader, so the injected epoch adds no error.
        if (follower_may_serve_ && target == e->leader_id) return;
        if (e_c < 0 && may_inject_ && check_ != Check::kPersister && ctx_.policy.inject_epochs) {
          d.verdict = Verdict::kInject;
          d.reason = Reason::kInjected;
          if (d.mode == config::Mode::kEnforce) ++out_.injected;
        }
        return;
      }
      case Check::kLeader: {
        if (target < 0) return;  // bootstrap connection: the target is unknown
        if (e->leader_id < 0) return refresh(d, Reason::kNoLeader);
        if (target == e->leader_id) return;
        return mismatch(d, *e, codec::kErrNotLeaderOrFollower, Reason::kNotLeader, true);
      }
      case Check::kNothing:
        return;
    }
  }

  const DecideContext& ctx_;
  RequestDecision& out_;
  ApiGroup group_;
  Check check_;
  bool may_inject_;  ///< the version has CurrentLeaderEpoch and writing it is safe
  bool follower_may_serve_;  ///< the version names a rack (KIP-392 follower fetching)
  const TopicEntry* topic_ = nullptr;
  config::Mode mode_ = config::Mode::kEnforce;
  std::string_view topic_name_;
  const codec::Uuid* topic_id_ = nullptr;
  bool topic_refresh_ = false;
  std::unordered_set<std::string> refresh_seen_;  ///< name + id of each urgent_refresh entry
};

const codec::Uuid kZeroId{};

/// The rows that apply, from the schema row's rule and what this request
/// carries: followers' requests (ReplicaId >= 0) and versions without the
/// checked epoch are never decided.
constexpr Check check_for(codec::PolicyRule rule, bool epoch_field, bool from_replica) {
  switch (rule) {
    case codec::PolicyRule::kLeader:
      return Check::kLeader;
    case codec::PolicyRule::kFetch:
      return from_replica ? Check::kNothing : Check::kFetch;
    case codec::PolicyRule::kEpoch:
      return epoch_field && !from_replica ? Check::kEpochOnly : Check::kNothing;
    case codec::PolicyRule::kPersister:
      return epoch_field ? Check::kPersister : Check::kNothing;
    case codec::PolicyRule::kNone:
      return Check::kNothing;
  }
  return Check::kNothing;
}

}  // namespace

template <class Req>
void decide(const Req& req, int16_t version, const DecideContext& ctx, RequestDecision& out) {
  using Q = codec::PartitionShape<Req>;
  constexpr codec::PolicyRule rule = codec::Api<Req::kApiKey>::kRule;
  const bool epoch_field = Q::has_epoch(version);
  const bool from_replica = Q::from_replica(req, version);
  // Only sessionless fetches (SessionEpoch -1) get an epoch injected: a fetch
  // session (KIP-227) caches each partition's epoch and keeps validating it
  // for partitions later requests omit (KAFKA-9338), so an injected epoch
  // would outlive the next leader-epoch bump and fence a client that asked
  // for no validation at all.
  const bool may_inject =
      Q::kEpochWritable && epoch_field && Q::session_epoch(req, version) == -1;
  // An API without a rule records no request epoch (the share coordinator
  // never checks ReadShareGroupStateSummary's).
  const bool reads_epoch = epoch_field && rule != codec::PolicyRule::kNone;
  TableWalker w(ctx, out, Req::kApiKey, version, detail::kGroupOf<Req>,
                check_for(rule, epoch_field, from_replica), may_inject,
                Q::follower_may_serve(version));
  const auto& topics = Q::topics(req);
  for (uint32_t ti = 0; ti < topics.size(); ++ti) {
    const auto& t = topics[ti];
    if (Q::by_id(version))
      w.begin_topic({}, Q::id(t));
    else
      w.begin_topic(Q::name(t), kZeroId);
    const auto& parts = Q::partitions(t);
    for (uint32_t pi = 0; pi < parts.size(); ++pi) {
      w.partition(ti, pi, Q::partition(parts[pi]), reads_epoch ? Q::epoch(parts[pi]) : -1);
      if (from_replica) out.partitions.back().reason = Reason::kReplicaRequest;
    }
    w.end_topic();
  }
  w.finish(Q::acks_zero(req), Q::kBrokerSession);
}

#define EPOCHGATE_INSTANTIATE(Req, Resp) \
  template void decide(const codec::Req&, int16_t, const DecideContext&, RequestDecision&);
EPOCHGATE_FOR_EACH_GROUPED_API(EPOCHGATE_INSTANTIATE)
#undef EPOCHGATE_INSTANTIATE
// A Produce's fields read in place (codec/produce_head.h): the same table.
template void decide(const codec::ProduceHead&, int16_t, const DecideContext&, RequestDecision&);

}  // namespace epochgate::policy
