// policy/epoch_dispute.cc
#include "policy/epoch_dispute.h"

#include <algorithm>

#include "policy/metadata_view.h"

namespace epochgate::policy::detail {

namespace {

uint16_t saturating_inc(uint16_t v) {
  return v == UINT16_MAX ? v : static_cast<uint16_t>(v + 1);
}

}  // namespace

bool note_lower(PartitionEntry& e, const LowerReport& in, uint64_t now_ms, uint32_t needed,
                LearnReport& rep) {
  auto& l = e.lower;
  const bool was_suspect = e.suspect();
  const bool was_disputed = e.disputed();
  const bool served = in.source == Source::kServed;
  l.reports = saturating_inc(l.reports);
  if (served) {
    l.served = saturating_inc(l.served);
    l.reports = std::max(l.reports, PartitionEntry::kDisputeReports);
  }
  if (in.epoch > l.epoch || (in.epoch == l.epoch && in.leader != l.leader && !served)) {
    l.epoch = in.epoch;
    l.leader = in.leader;
    l.agreeing = 1;
  } else if (in.epoch == l.epoch && in.leader == l.leader) {
    l.agreeing = saturating_inc(l.agreeing);
  }  // else: older than the candidate, or a served answer from another broker:
     // it only counts against the entry
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
  e.source = in.source;
  if (in.replicas) e.replica_set = in.replicas;
  e.rolled_back_served = l.served;
  e.lower = {};
  e.rollbacks = saturating_inc(e.rollbacks);
  e.rolled_back_from = from;
  e.rolled_back_at_ms = now_ms;
  rep.epochs_rolled_back++;
  return false;
}

}  // namespace epochgate::policy::detail
