// policy/answer.h: what epochgate writes instead of (or in addition to) a
// broker: local answers for fenced partitions, the rewritten request for the
// rest, the merge of both halves into one response, and KIP-951 hints added to
// broker errors that lack them (docs/architecture.md sections 6-7). Each is one
// template over the generated partition shapes (codec/messages/api_traits.h),
// instantiated for every API the schema rows mark decided; the operations live
// in local_answer.cc, request_rewrite.cc, response_merge.cc, hint_backfill.cc.
// Must never: put an upstream address in NodeEndpoints, hint an epoch that is
// not strictly newer than the one fenced, hint a node id absent from
// NodeEndpoints, hint a leaderless (-1) partition, or do I/O.
#pragma once

#include <cstdint>

#include "codec/messages/api_traits.h"
#include "policy/decision.h"
#include "policy/endpoint_resolver.h"
#include "policy/metadata_snapshot.h"
#include "policy/mode_resolver.h"

namespace epochgate::policy {

/// The response type of request type `Req` (and back), from the API table.
template <class Req>
using ResponseOf = typename codec::Api<Req::kApiKey>::Response;
template <class Resp>
using RequestOf = typename codec::Api<Resp::kApiKey>::Request;

/// Counts for `epochgate_hints_total{source}`.
struct AnswerStats {
  uint32_t hints = 0;          ///< CurrentLeader hints written
  uint32_t hints_dropped = 0;  ///< hints left out: no epochgate listener for the leader
};

/// True when a response of (api_key, version) can carry a CurrentLeader hint
/// together with NodeEndpoints (the `hints` column of codec/api_table.h):
/// Produce v10+, Fetch v16+, ShareFetch and ShareAcknowledge (every version).
/// Fetch v12-15 has CurrentLeader but no NodeEndpoints, so epochgate gives no
/// hint there.
bool version_carries_hints(int16_t api_key, int16_t version);

/// Local answer: a response at the client's `version` holding exactly the
/// partitions the decision answers locally (PartitionDecision::answered_locally),
/// in request order, topics with none left out. Error code per partition,
/// CurrentLeader + NodeEndpoints (epochgate's address from `endpoints`, rack
/// from the view) where the version carries them, throttle 0, every other
/// field as a broker fills it for an errored partition (the schema's onError
/// values: offsets -1, empty records). A fenced partition that carried share
/// acknowledgements also gets AcknowledgeErrorCode (they were not applied).
/// Fetch: session_id is 0, so a local answer creates or continues no session.
template <class Req>
ResponseOf<Req> build_local_response(const Req& req, int16_t version, const RequestDecision& d,
                                     const MetadataSnapshot& view,
                                     const EndpointResolver& endpoints,
                                     AnswerStats* stats = nullptr);

/// Rewritten request: a copy of `req` without the partitions answered
/// locally (topics left empty are dropped) and with the view's epoch written
/// into CurrentLeaderEpoch where the decision injects. Record data is not
/// copied (codec::Bytes views into the original frame, which must outlive it).
template <class Req>
Req rewrite_request(const Req& req, int16_t version, const RequestDecision& d);

/// Merging (split requests): one response in the original request's topic and
/// partition order, taking fenced partitions from `local` and the others from
/// `upstream`; partitions the broker returned that the request did not name
/// (fetch sessions) follow their topic's, unknown topics come last; a fenced
/// partition the broker also returned is answered by `local`. Throttle time is
/// the larger one; NodeEndpoints are the union by node id (local entries win).
/// Top-level errors (Fetch, ShareFetch, ShareAcknowledge): a non-zero upstream
/// error is returned as is (the client ignores partitions then and retries).
/// Rewrite upstream broker addresses before or after: both are keyed by node id.
template <class Req>
ResponseOf<Req> merge_responses(const Req& req, int16_t version, const RequestDecision& d,
                                ResponseOf<Req> upstream, ResponseOf<Req> local);

/// Backfill (brokers before 3.7, or any broker that left the hint -1/-1): adds
/// CurrentLeader + NodeEndpoints to NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH
/// partitions without a usable hint, from the view, at the response's
/// `version` (which must carry hints). Only from an entry that is hintable
/// (leader and epoch known, not suspect), younger than max_staleness_ms, with
/// an epoch strictly newer than the request's (when `req` is given and carries
/// epochs), and for NOT_LEADER_OR_FOLLOWER not naming the broker that just
/// refused. Call it after learning from the response. Returns the number of
/// hints added.
///
/// A hint the broker sent itself (its own CurrentLeader) also gets epochgate's
/// NodeEndpoints entry when the response lacks one (a v15 broker bridged to
/// v16, or a broker whose leader is not on the request's listener): a hint
/// without an endpoint is ignored by librdkafka and franz-go.
/// Topics whose mode (for the response's API group) is not enforce are left
/// exactly as the broker sent them: observe mode never changes a byte.
struct BackfillContext {
  const MetadataSnapshot& view;
  const EndpointResolver& endpoints;
  int32_t target_node = -1;  ///< broker that sent the response (-1 unknown)
  uint64_t now_ms = 0;
  uint32_t max_staleness_ms = 300000;
  const ModeResolver* modes = nullptr;  ///< null: every topic is enforced
};

template <class Resp>
uint32_t backfill_hints(Resp& resp, int16_t version, const RequestOf<Resp>* req,
                        const BackfillContext& ctx);

template <class Resp>
uint32_t backfill_hints(Resp& resp, int16_t version, const BackfillContext& ctx) {
  return backfill_hints(resp, version, static_cast<const RequestOf<Resp>*>(nullptr), ctx);
}

}  // namespace epochgate::policy
