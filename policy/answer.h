// policy/answer.h: what epochgate writes instead of (or in addition to) a
// broker: local answers for fenced partitions, the rewritten request for the
// rest, the merge of both halves into one response, and KIP-951 hints added to
// broker errors that lack them (DESIGN.md sections 6-7, seed 002).
// Must never: put an upstream address in NodeEndpoints, hint an epoch that is
// not strictly newer than the one fenced, hint a node id absent from
// NodeEndpoints, hint a leaderless (-1) partition, or do I/O.
#pragma once

#include <cstdint>

#include "codec/messages/fetch_request.h"
#include "codec/messages/fetch_response.h"
#include "codec/messages/list_offsets_request.h"
#include "codec/messages/list_offsets_response.h"
#include "codec/messages/offset_for_leader_epoch_request.h"
#include "codec/messages/offset_for_leader_epoch_response.h"
#include "codec/messages/produce_request.h"
#include "codec/messages/produce_response.h"
#include "codec/messages/read_share_group_state_request.h"
#include "codec/messages/read_share_group_state_response.h"
#include "codec/messages/share_acknowledge_request.h"
#include "codec/messages/share_acknowledge_response.h"
#include "codec/messages/share_fetch_request.h"
#include "codec/messages/share_fetch_response.h"
#include "codec/messages/write_share_group_state_request.h"
#include "codec/messages/write_share_group_state_response.h"
#include "policy/decision.h"
#include "policy/endpoint_resolver.h"
#include "policy/mode_resolver.h"
#include "policy/metadata_snapshot.h"

namespace epochgate::policy {

/// Counts for `epochgate_hints_total{source}`.
struct AnswerStats {
  uint32_t hints = 0;          ///< CurrentLeader hints written
  uint32_t hints_dropped = 0;  ///< hints left out: no epochgate listener for the leader
};

/// True when a response of (api_key, version) can carry a CurrentLeader hint
/// together with NodeEndpoints: Produce v10+, Fetch v16+, ShareFetch and
/// ShareAcknowledge (every version). Fetch v12-15 has CurrentLeader but no
/// NodeEndpoints, so epochgate gives no hint there.
bool version_carries_hints(int16_t api_key, int16_t version);

// ---------------------------------------------------------------------------
// Local answers: a response at the client's `version` holding exactly the
// partitions the decision answers locally (PartitionDecision::answered_locally),
// in request order, topics with none left out. Error code per partition,
// CurrentLeader + NodeEndpoints (epochgate's address from `endpoints`, rack
// from the view) where the version carries them, throttle 0, every other field
// as a broker fills it for an errored partition (offsets -1, empty records).

codec::ProduceResponse build_local_response(const codec::ProduceRequest& req, int16_t version,
                                            const RequestDecision& d, const MetadataSnapshot& view,
                                            const EndpointResolver& endpoints,
                                            AnswerStats* stats = nullptr);
/// session_id is 0: a locally answered fetch creates or continues no session.
codec::FetchResponse build_local_response(const codec::FetchRequest& req, int16_t version,
                                          const RequestDecision& d, const MetadataSnapshot& view,
                                          const EndpointResolver& endpoints,
                                          AnswerStats* stats = nullptr);
codec::ListOffsetsResponse build_local_response(const codec::ListOffsetsRequest& req,
                                                int16_t version, const RequestDecision& d,
                                                const MetadataSnapshot& view,
                                                const EndpointResolver& endpoints,
                                                AnswerStats* stats = nullptr);
codec::OffsetForLeaderEpochResponse build_local_response(
    const codec::OffsetForLeaderEpochRequest& req, int16_t version, const RequestDecision& d,
    const MetadataSnapshot& view, const EndpointResolver& endpoints, AnswerStats* stats = nullptr);
/// A fenced partition that carried acknowledgements also gets
/// AcknowledgeErrorCode NOT_LEADER_OR_FOLLOWER (they were not applied).
codec::ShareFetchResponse build_local_response(const codec::ShareFetchRequest& req, int16_t version,
                                               const RequestDecision& d,
                                               const MetadataSnapshot& view,
                                               const EndpointResolver& endpoints,
                                               AnswerStats* stats = nullptr);
codec::ShareAcknowledgeResponse build_local_response(const codec::ShareAcknowledgeRequest& req,
                                                     int16_t version, const RequestDecision& d,
                                                     const MetadataSnapshot& view,
                                                     const EndpointResolver& endpoints,
                                                     AnswerStats* stats = nullptr);
codec::ReadShareGroupStateResponse build_local_response(
    const codec::ReadShareGroupStateRequest& req, int16_t version, const RequestDecision& d,
    const MetadataSnapshot& view, const EndpointResolver& endpoints, AnswerStats* stats = nullptr);
codec::WriteShareGroupStateResponse build_local_response(
    const codec::WriteShareGroupStateRequest& req, int16_t version, const RequestDecision& d,
    const MetadataSnapshot& view, const EndpointResolver& endpoints, AnswerStats* stats = nullptr);

// ---------------------------------------------------------------------------
// Rewritten requests: a copy of `req` without the partitions answered
// locally (topics left empty are dropped) and with the view's epoch written
// into CurrentLeaderEpoch where the decision injects. Record data is not
// copied (codec::Bytes views into the original frame, which must outlive it).

codec::ProduceRequest rewrite_request(const codec::ProduceRequest& req, int16_t version,
                                      const RequestDecision& d);
codec::FetchRequest rewrite_request(const codec::FetchRequest& req, int16_t version,
                                    const RequestDecision& d);
codec::ListOffsetsRequest rewrite_request(const codec::ListOffsetsRequest& req, int16_t version,
                                          const RequestDecision& d);
codec::OffsetForLeaderEpochRequest rewrite_request(const codec::OffsetForLeaderEpochRequest& req,
                                                   int16_t version, const RequestDecision& d);
codec::ShareFetchRequest rewrite_request(const codec::ShareFetchRequest& req, int16_t version,
                                         const RequestDecision& d);
codec::ShareAcknowledgeRequest rewrite_request(const codec::ShareAcknowledgeRequest& req,
                                               int16_t version, const RequestDecision& d);
codec::ReadShareGroupStateRequest rewrite_request(const codec::ReadShareGroupStateRequest& req,
                                                  int16_t version, const RequestDecision& d);
codec::WriteShareGroupStateRequest rewrite_request(const codec::WriteShareGroupStateRequest& req,
                                                   int16_t version, const RequestDecision& d);

// ---------------------------------------------------------------------------
// Merging (split requests): one response in the original request's topic and
// partition order, taking fenced partitions from `local` and the others from
// `upstream`; partitions the broker returned that the request did not name
// (fetch sessions) follow their topic's, unknown topics come last; a fenced
// partition the broker also returned is answered by `local`. Throttle time is
// the larger one; NodeEndpoints are the union by node id (local entries win).
// Top-level errors (Fetch, ShareFetch, ShareAcknowledge): a non-zero upstream
// error is returned as is (the client ignores partitions then and retries).
// Rewrite upstream broker addresses before or after: both are keyed by node id.

codec::ProduceResponse merge_responses(const codec::ProduceRequest& req, int16_t version,
                                       const RequestDecision& d, codec::ProduceResponse upstream,
                                       codec::ProduceResponse local);
codec::FetchResponse merge_responses(const codec::FetchRequest& req, int16_t version,
                                     const RequestDecision& d, codec::FetchResponse upstream,
                                     codec::FetchResponse local);
codec::ListOffsetsResponse merge_responses(const codec::ListOffsetsRequest& req, int16_t version,
                                           const RequestDecision& d,
                                           codec::ListOffsetsResponse upstream,
                                           codec::ListOffsetsResponse local);
codec::OffsetForLeaderEpochResponse merge_responses(const codec::OffsetForLeaderEpochRequest& req,
                                                    int16_t version, const RequestDecision& d,
                                                    codec::OffsetForLeaderEpochResponse upstream,
                                                    codec::OffsetForLeaderEpochResponse local);
codec::ShareFetchResponse merge_responses(const codec::ShareFetchRequest& req, int16_t version,
                                          const RequestDecision& d,
                                          codec::ShareFetchResponse upstream,
                                          codec::ShareFetchResponse local);
codec::ShareAcknowledgeResponse merge_responses(const codec::ShareAcknowledgeRequest& req,
                                                int16_t version, const RequestDecision& d,
                                                codec::ShareAcknowledgeResponse upstream,
                                                codec::ShareAcknowledgeResponse local);
codec::ReadShareGroupStateResponse merge_responses(const codec::ReadShareGroupStateRequest& req,
                                                   int16_t version, const RequestDecision& d,
                                                   codec::ReadShareGroupStateResponse upstream,
                                                   codec::ReadShareGroupStateResponse local);
codec::WriteShareGroupStateResponse merge_responses(const codec::WriteShareGroupStateRequest& req,
                                                    int16_t version, const RequestDecision& d,
                                                    codec::WriteShareGroupStateResponse upstream,
                                                    codec::WriteShareGroupStateResponse local);

// ---------------------------------------------------------------------------
// Backfill (brokers before 3.7, or any broker that left the hint -1/-1): adds
// CurrentLeader + NodeEndpoints to NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH
// partitions without a usable hint, from the view, at the response's
// `version` (which must carry hints). Only from an entry that is hintable
// (leader and epoch known, not suspect), younger than max_staleness_ms, with
// an epoch strictly newer than the request's (Fetch, when `req` is given), and
// for NOT_LEADER_OR_FOLLOWER not naming the broker that just refused. Call it
// after learning from the response. Returns the number of hints added.

// A hint the broker sent itself (its own CurrentLeader) also gets epochgate's
// NodeEndpoints entry when the response lacks one (a v15 broker bridged to
// v16, or a broker whose leader is not on the request's listener): a hint
// without an endpoint is ignored by librdkafka and franz-go.
// Topics whose mode (for the response's API group) is not enforce are left
// exactly as the broker sent them: observe mode never changes a byte.
struct BackfillContext {
  const MetadataSnapshot& view;
  const EndpointResolver& endpoints;
  int32_t target_node = -1;  ///< broker that sent the response (-1 unknown)
  uint64_t now_ms = 0;
  uint32_t max_staleness_ms = 300000;
  const ModeResolver* modes = nullptr;  ///< null: every topic is enforced
};

uint32_t backfill_hints(codec::ProduceResponse& resp, int16_t version, const BackfillContext& ctx);
uint32_t backfill_hints(codec::FetchResponse& resp, int16_t version, const codec::FetchRequest* req,
                        const BackfillContext& ctx);
uint32_t backfill_hints(codec::ShareFetchResponse& resp, int16_t version,
                        const BackfillContext& ctx);
uint32_t backfill_hints(codec::ShareAcknowledgeResponse& resp, int16_t version,
                        const BackfillContext& ctx);

}  // namespace epochgate::policy
