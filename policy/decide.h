// policy/decide.h: the fencing decision table (docs/architecture.md section 7) as pure
// functions of (decoded request, version, view snapshot, target broker,
// compiled policy, now_ms). Must never: do I/O, read a clock, fence on
// ignorance (unknown, stale, suspect or epoch-less entries always pass), or
// answer a Produce with FENCED_LEADER_EPOCH.
#pragma once

#include <cstdint>

#include "codec/messages/api_traits.h"
#include "policy/compiled_policy.h"
#include "policy/decision.h"
#include "policy/metadata_snapshot.h"

namespace epochgate::policy {

/// Everything a decision depends on besides the request.
struct DecideContext {
  const MetadataSnapshot& view;
  const CompiledPolicy& policy;
  /// Node id of the broker this connection forwards to; -1 for the bootstrap
  /// connection (the target is unknown, so no leadership checks).
  int32_t target_node = -1;
  uint64_t now_ms = 0;
  /// False on the second decision after a hold (or when no refresher runs):
  /// entries older than refresh_before_fence_ms then fence like fresh ones.
  bool allow_hold = true;
};

/// True when the policy decides requests of (api_key, version), i.e. the
/// session must decode them: the `decided` column of codec/api_table.h (the
/// `decide` attribute of codec/schema/api_keys.schema): Produce and Fetch (all
/// versions), ListOffsets v4+, OffsetForLeaderEpoch v2+, ShareFetch,
/// ShareAcknowledge, ReadShareGroupState, WriteShareGroupState. Every other
/// frame passes as bytes.
bool policy_decides(int16_t api_key, int16_t version);

/// Decides one request into `out` (cleared first; capacity reused), for every
/// API whose schema row names a mode group (EPOCHGATE_FOR_EACH_GROUPED_API).
/// The rows applied follow the row's rule; an API without one (Initialize and
/// DeleteShareGroupState carry no epoch, ReadShareGroupStateSummary one the
/// share coordinator never checks) passes every partition. The overload
/// returning a RequestDecision is a convenience. Also instantiated for
/// codec::ProduceHead (codec/produce_head.h): a Produce's decided fields
/// read in place decide as its full decode does.
template <class Request>
void decide(const Request& req, int16_t version, const DecideContext& ctx, RequestDecision& out);

template <class Request>
RequestDecision decide(const Request& req, int16_t version, const DecideContext& ctx) {
  RequestDecision out;
  decide(req, version, ctx, out);
  return out;
}

}  // namespace epochgate::policy
