// policy/decide.h: the fencing decision table (DESIGN.md section 7) as pure
// functions of (decoded request, version, view snapshot, target broker,
// compiled policy, now_ms). Must never: do I/O, read a clock, fence on
// ignorance (unknown, stale, suspect or epoch-less entries always pass), or
// answer a Produce with FENCED_LEADER_EPOCH.
#pragma once

#include <cstdint>

#include "codec/messages/delete_share_group_state_request.h"
#include "codec/messages/fetch_request.h"
#include "codec/messages/initialize_share_group_state_request.h"
#include "codec/messages/list_offsets_request.h"
#include "codec/messages/offset_for_leader_epoch_request.h"
#include "codec/messages/produce_request.h"
#include "codec/messages/read_share_group_state_request.h"
#include "codec/messages/read_share_group_state_summary_request.h"
#include "codec/messages/share_acknowledge_request.h"
#include "codec/messages/share_fetch_request.h"
#include "codec/messages/write_share_group_state_request.h"
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
/// session must decode them: Produce and Fetch (all versions), ListOffsets
/// v4+, OffsetForLeaderEpoch v2+, ShareFetch, ShareAcknowledge,
/// ReadShareGroupState, WriteShareGroupState. Every other frame passes as bytes.
bool policy_decides(int16_t api_key, int16_t version);

/// Decides one request into `out` (cleared first; capacity reused). The
/// overloads returning a RequestDecision are conveniences.
void decide(const codec::ProduceRequest& req, int16_t version, const DecideContext& ctx,
            RequestDecision& out);
void decide(const codec::FetchRequest& req, int16_t version, const DecideContext& ctx,
            RequestDecision& out);
void decide(const codec::ListOffsetsRequest& req, int16_t version, const DecideContext& ctx,
            RequestDecision& out);
void decide(const codec::OffsetForLeaderEpochRequest& req, int16_t version,
            const DecideContext& ctx, RequestDecision& out);
void decide(const codec::ShareFetchRequest& req, int16_t version, const DecideContext& ctx,
            RequestDecision& out);
void decide(const codec::ShareAcknowledgeRequest& req, int16_t version, const DecideContext& ctx,
            RequestDecision& out);
void decide(const codec::ReadShareGroupStateRequest& req, int16_t version, const DecideContext& ctx,
            RequestDecision& out);
void decide(const codec::WriteShareGroupStateRequest& req, int16_t version,
            const DecideContext& ctx, RequestDecision& out);
/// These carry no leader epoch (Initialize, Delete) or one the group
/// coordinator always sends as 0 and the share coordinator never checks
/// (ReadShareGroupStateSummary): every partition passes.
void decide(const codec::InitializeShareGroupStateRequest& req, int16_t version,
            const DecideContext& ctx, RequestDecision& out);
void decide(const codec::DeleteShareGroupStateRequest& req, int16_t version,
            const DecideContext& ctx, RequestDecision& out);
void decide(const codec::ReadShareGroupStateSummaryRequest& req, int16_t version,
            const DecideContext& ctx, RequestDecision& out);

template <class Request>
RequestDecision decide(const Request& req, int16_t version, const DecideContext& ctx) {
  RequestDecision out;
  decide(req, version, ctx, out);
  return out;
}

}  // namespace epochgate::policy
