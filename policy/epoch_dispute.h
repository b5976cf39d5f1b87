// policy/epoch_dispute.h: the tally of lower-epoch reports against one view
// entry (docs/architecture.md invariant 6): when they stop the entry's fencing and when
// they roll its epoch back. Called only by the view's writer, under its lock.
// Must never: move an epoch back on one report, or let a broker that is not
// the candidate leader replace a candidate it cannot vouch for.
#pragma once

#include <cstdint>
#include <memory>

#include "policy/metadata_snapshot.h"

namespace epochgate::policy {

struct LearnReport;

namespace detail {

/// One report of a lower epoch for the same topic id as the entry's.
struct LowerReport {
  int32_t leader = -1;
  int32_t epoch = -1;
  std::shared_ptr<const ReplicaSet> replicas;  ///< null: the report has none
  Source source = Source::kMetadataResponse;
};

/// Tallies `in` against `e` (whose epoch is higher). Repeated reports stop
/// the entry's fencing; a broker serving a request at the lower epoch
/// (Source::kServed) stops it at once, since a broker answers a request at
/// an epoch other than its own with FENCED_LEADER_EPOCH or
/// UNKNOWN_LEADER_EPOCH (KIP-320). `needed` reports naming one (leader,
/// epoch) replace the entry with it. A served report never replaces a
/// candidate of the same epoch naming another leader (the answering broker
/// may be a follower, KIP-392). Returns true while the topic should be
/// refreshed to gather the confirmations that settle it.
bool note_lower(PartitionEntry& e, const LowerReport& in, uint64_t now_ms, uint32_t needed,
                LearnReport& rep);

}  // namespace detail
}  // namespace epochgate::policy
