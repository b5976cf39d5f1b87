// policy/decision.h: the result of deciding one request (docs/architecture.md section 7):
// a verdict per partition, in request order, and one action for the whole
// request. Plain data: must never hold pointers into the request or the view.
#pragma once

#include <cstdint>
#include <vector>

#include "codec/header.h"
#include "config/config.h"
#include "policy/metadata_snapshot.h"
#include "policy/mode_resolver.h"

namespace epochgate::policy {


/// What happens to one partition.
enum class Verdict : uint8_t {
  kPass,            ///< forward unchanged
  kFence,           ///< answer locally with error_code (+ hint)
  kInject,          ///< forward with CurrentLeaderEpoch -1 replaced by the view's epoch
  kPassAndRefresh,  ///< forward unchanged; the view needs a refresh for this topic
  kHold,            ///< mismatch on an old entry: refresh first, then decide again
};
const char* verdict_name(Verdict v);

/// Why. Bounded set: the `reason` label of epochgate_fenced_partitions_total
/// (fence verdicts use stale_epoch, not_leader, not_replica).
enum class Reason : uint8_t {
  kNone,              ///< "none": nothing to report (in agreement, or mode off)
  kStaleEpoch,        ///< "stale_epoch": CurrentLeaderEpoch/LeaderEpoch older than the view
  kNotLeader,         ///< "not_leader": Produce/ShareFetch/ShareAcknowledge to b != L
  kNotReplica,        ///< "not_replica": Fetch to a broker neither leader nor replica
  kInjected,          ///< "injected": -1 replaced by the view's epoch
  kViewBehind,        ///< "view_behind": the request's epoch is newer than the view's
  kUnknownPartition,  ///< "unknown_partition": the view does not know it
  kStaleView,         ///< "stale_view": entry older than max_staleness_ms
  kSuspect,           ///< "suspect": entry conflicted or doubted
  kNoLeader,          ///< "no_leader": the view knows no leader for it
  kNoEpoch,           ///< "no_epoch": the view has no epoch (learned from Metadata < v7)
  kReplicaRequest,    ///< "replica_request": inter-broker traffic, never decided
};
const char* reason_name(Reason r);

/// What the session does with the whole request.
enum class Action : uint8_t {
  kForwardAsIs,       ///< original bytes upstream
  kForwardRewritten,  ///< re-encoded upstream: epochs injected (no partition fenced)
  kAnswerLocally,     ///< every partition fenced: answer, nothing goes upstream
  kSplit,             ///< some fenced (or all, in a share session): rewrite, forward, merge
  kCloseConnection,   ///< acks=0 Produce to a stale leader (enforce): close, never answer
  kHold,              ///< refresh the view first (bounded wait), then decide again
};
const char* action_name(Action a);

/// The verdict for one partition of the request.
struct PartitionDecision {
  uint32_t topic_index = 0;      ///< index of the topic in the request's topic array
  uint32_t partition_index = 0;  ///< index of the partition in that topic's array
  int32_t partition = 0;         ///< the partition number
  Verdict verdict = Verdict::kPass;
  Reason reason = Reason::kNone;
  config::Mode mode = config::Mode::kEnforce;
  int16_t error_code = 0;      ///< kFence/kHold: NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
  int32_t request_epoch = -1;  ///< epoch in the request (-1: none or absent)
  int32_t view_epoch = -1;     ///< the view's epoch when decided (-1 unknown); kInject writes it
  int32_t hint_leader = -1;    ///< kFence: leader to hint, -1 when no hint may be given
  int32_t hint_epoch = -1;     ///< strictly newer than request_epoch when set

  /// Answered by epochgate (a fence in enforce mode).
  bool answered_locally() const {
    return verdict == Verdict::kFence && mode == config::Mode::kEnforce;
  }
  /// The forwarded request carries view_epoch instead of -1.
  bool injected() const { return verdict == Verdict::kInject && mode == config::Mode::kEnforce; }
  bool has_hint() const { return hint_leader >= 0 && hint_epoch >= 0; }
};

/// The decision for one request.
struct RequestDecision {
  int16_t api_key = -1;
  int16_t version = -1;
  ApiGroup group = ApiGroup::kProduce;
  Action action = Action::kForwardAsIs;
  /// Every partition of the request, in request order (topic by topic).
  std::vector<PartitionDecision> partitions;
  /// partitions index of each topic's first partition; size = topics + 1.
  std::vector<uint32_t> topic_start;
  /// Topics the refresher should fetch now (deduplicated; coalesce upstream).
  std::vector<TopicRef> urgent_refresh;
  uint32_t fenced = 0;           ///< partitions answered locally
  uint32_t observed_fences = 0;  ///< fences decided in observe mode (not applied)
  uint32_t injected = 0;         ///< partitions whose epoch is injected
  uint32_t held = 0;             ///< partitions waiting for a refresh (action kHold)
  uint32_t hold_timeout_ms = 0;  ///< kHold: longest wait before deciding again

  /// The decision for partition `partition_index` of topic `topic_index`.
  const PartitionDecision& at(uint32_t topic_index, uint32_t partition_index) const {
    return partitions[topic_start[topic_index] + partition_index];
  }
  size_t topic_count() const { return topic_start.empty() ? 0 : topic_start.size() - 1; }
  /// Empties the decision, keeping capacity (for reuse on a hot path).
  void clear();
};

}  // namespace epochgate::policy
