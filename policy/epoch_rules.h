// policy/epoch_rules.h: the view's learning rules for one partition entry
// (docs/architecture.md section 5, invariant 6): what one report (a Metadata answer, a
// KIP-951 hint, a leader error) does to the entry's leader and epoch, and
// which broker error codes call for an urgent refresh. Internal to the view
// (metadata_view.cc and response_learning.cc). Must never: move an epoch
// backwards on one report, or store a -1 leader or epoch as a hint.
#pragma once

#include <cstdint>
#include <memory>

#include "policy/metadata_view.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy::epoch_rules {

// A partition index beyond this is not believed (it would make the view
// allocate a huge slot vector); Kafka topics stay far below it.
inline constexpr int32_t kMaxPartitionIndex = 1 << 20;

/// True for the error codes that say the view is stale for a partition.
inline bool needs_refresh(int16_t error) {
  return error == codec::kErrNotLeaderOrFollower || error == codec::kErrFencedLeaderEpoch ||
         error == codec::kErrUnknownLeaderEpoch || error == codec::kErrUnknownTopicOrPartition ||
         error == codec::kErrUnknownTopicId || error == codec::kErrLeaderNotAvailable;
}

/// One report about one partition.
struct Incoming {
  int32_t leader = -1;
  int32_t epoch = -1;                          ///< -1: the report carries no epoch
  std::shared_ptr<const ReplicaSet> replicas;  ///< null: the report has none
  /// The report and the view name the topic with the same non-zero id, so a
  /// lower epoch is a lagging broker, not a recreated topic.
  bool ids_verified = false;
};

/// The entry of `partition` in `t`, grown as needed; nullptr for an index
/// outside 0..kMaxPartitionIndex.
PartitionEntry* slot(TopicEntry& t, int32_t partition);
/// Marks `e` doubted (fencing stops trusting it until a refresh confirms it).
void doubt(PartitionEntry& e, LearnReport& rep);
/// What apply() would do with a report that names the entry's own leader
/// (and epoch) and the entry's own replica set: kNo (it would change more),
/// kStamp (only learned_at_ms and source: the report confirms the entry),
/// kNothing (a report too weak to reset the entry's age). Lets a refresh that
/// confirms a whole topic skip the copy-on-write of that topic.
enum class Confirmation { kNo, kStamp, kNothing };
Confirmation confirmation(const PartitionEntry& e, int32_t leader, int32_t epoch, Source src);
/// The epoch rules. Returns true when the topic should be refreshed urgently.
/// Sets `advanced` when the entry's epoch moved forward. `rollback_needed`:
/// lower reports of one (leader, epoch) that replace the entry (>= 2).
bool apply(PartitionEntry& e, const Incoming& in, Source src, uint64_t now_ms, LearnReport& rep,
           bool& advanced, uint32_t rollback_needed);

}  // namespace epochgate::policy::epoch_rules
