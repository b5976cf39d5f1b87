// proxy/core/fencing_hooks.h: the seam between a session and the fencing policy
// (policy/ decides, this seam applies). The session calls plan_request() for
// every request the API table (codec/api_table.h) marks decided, and the
// response hooks for the responses it learns from or must merge. The hooks
// take any response the policy reads as one variant (PolicyResponse, from
// the generated list of decided APIs), so the seam does not grow with the
// APIs. Implementations run on the session's loop thread and must not block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codec/header.h"
#include "codec/messages/api_traits.h"
#include "codec/messages/metadata_response.h"
#include "codec/messages/produce_response.h"
#include "metrics/close_reason.h"
#include "proxy/core/in_flight_queue.h"
#include "proxy/core/request_frame.h"

namespace epochgate::proxy {

class Connection;

class BufferBudget;
struct ReroutePlan;

/// A decoded response the policy reads: every decided API's, and Metadata's
/// (the one API learned without being decided).
#define EPOCHGATE_POLICY_RESPONSE_PTR(Req, Resp) codec::Resp*,
using PolicyResponse = std::variant<EPOCHGATE_FOR_EACH_DECIDED_API(EPOCHGATE_POLICY_RESPONSE_PTR)
                                        codec::MetadataResponse*>;
#undef EPOCHGATE_POLICY_RESPONSE_PTR

/// Policy hooks a session calls; see PolicyFencing (proxy/fencing/policy_fencing.h).
class FencingHooks {
 public:
  virtual ~FencingHooks() = default;

  /// One request on the listener of `node_id`: the frame with its header
  /// read once by the session (proxy/core/request_frame.h).
  struct RequestInput {
    int32_t node_id = -1;
    /// The request; `frame->decided` and `frame->header_parsed` are true.
    const RequestFrame* frame = nullptr;
    bool after_hold = false;  ///< held for hold_timeout_ms already: never hold again
    uint64_t hold_started_ms = 0;  ///< monotonic ms the request started waiting (0: not held)
    /// now_ns() when the session took the request up, reused as the
    /// decision's clock (0: the policy reads the clock itself).
    uint64_t now_ns = 0;
    BufferBudget* budget = nullptr;  ///< where the decoded request's memory is counted (may be null)
    /// The client's connection (may be null): fence log lines name its
    /// address, read only when a fence is logged.
    const Connection* client = nullptr;
    /// The frame is a Produce's head only (its last partition's records
    /// still arriving, passed as empty): the plan commits (counts, refresh,
    /// probe) only when it forwards the original bytes as they are, and
    /// otherwise returns `whole_frame` with nothing done, to be asked again
    /// on the whole frame.
    bool head_only = false;
  };

  /// What to do with the request.
  struct RequestPlan {
    enum class Action {
      kForward,           ///< forward the original bytes
      kForwardRewritten,  ///< forward `frame` instead (size-prefixed); merge later via `context`
      kAnswerLocally,     ///< send `frame` (size-prefixed response) to the client
      kClose,             ///< close the connection (acks=0 Produce to a stale leader)
      /// acks=0 Produce mixing good and stale partitions: forward `frame`
      /// (the good partitions only), then close once it is written, as a
      /// broker appends the good ones and then closes
      kForwardThenClose,
      kHold,              ///< refresh requested: ask again shortly (bounded by hold_timeout_ms)
    };
    Action action = Action::kForward;
    std::vector<uint8_t> frame;
    std::unique_ptr<EntryContext> context;
    /// kForwardRewritten of a split: `context` holds a part epochgate answered.
    bool local_part = false;
    std::string reason;     ///< for the log line of kClose
    bool malformed = false; ///< kClose because the request did not decode
    /// Metric reason of a malformed kClose (`epochgate_frame_errors_total{reason}`).
    metrics::CloseReason close_reason = metrics::CloseReason::kMalformedRequest;
    /// A Produce on a rerouting topic: the partitions epochgate may deliver
    /// to their leader (answered locally in `frame`/`context` meanwhile)
    /// and the streams of the order guard (proxy/core/reroute_plan.h).
    std::shared_ptr<ReroutePlan> reroute;
    /// A `head_only` request that must be decided on its whole frame (a
    /// fenced partition, a hold, a reroute rule, a decode error).
    bool whole_frame = false;
  };

  /// Decides on a request the API table marks decided at its version
  /// (the session checked `frame->decided`; nothing here checks it again).
  virtual RequestPlan plan_request(const RequestInput& in) = 0;

  /// The response steps of the session's one pipeline
  /// (proxy/session/response_pipeline.cc): decode, learn_response, rewrite
  /// addresses, amend_response (merge, backfill), encode.
  ///
  /// learn_response: learns from a broker response BEFORE its addresses are
  /// rewritten (NodeEndpoints then still name upstream brokers): Metadata,
  /// CurrentLeader hints, leader errors, node addresses. `version` is the
  /// upstream version; `node_id` the broker that answered (-1: the
  /// bootstrap listener). A response the table does not mark learned is
  /// left alone.
  virtual void learn_response(PolicyResponse m, int16_t version, int32_t node_id) = 0;

  /// amend_response: amends a response of a decided API AFTER address
  /// rewriting, at the client's version: learns which partitions the broker
  /// served below the view's epoch, merges a split request's local part,
  /// backfills missing KIP-951 hints (epochgate addresses). Returns true if
  /// the response changed.
  virtual bool amend_response(InFlightEntry& e, PolicyResponse m, int16_t client_version,
                              int32_t node_id) = 0;

  /// True when a Produce success from broker `node_id` on partition
  /// `partition` of topic `topic` (by id when `topic` is empty) would teach
  /// the view something (learn_response must see the response). The
  /// default says yes, so a policy that does not answer decodes every one.
  virtual bool produce_success_is_news(std::string_view topic, const codec::Uuid& id,
                                       int32_t partition, int32_t node_id) {
    return true;
  }

  /// The view's leader and epoch of partition `partition` of topic `topic`
  /// (by id when `topic` is empty); false when the view knows none. With
  /// `refresh`, asks for an urgent refresh of the topic too.
  virtual bool leader_of(std::string_view topic, const codec::Uuid& id, int32_t partition,
                         int32_t& leader, int32_t& epoch, bool refresh) {
    return false;
  }

  /// KIP-951 hint on a Produce partition `leader` accepted (a reroute's
  /// answer): when the view agrees `leader` leads the partition (named as in
  /// leader_of()), sets `p`'s CurrentLeader to it with the view's epoch and
  /// gives `leader` an entry with epochgate's listener in `endpoints`
  /// (unless it has one), through policy::HintBuilder. False, nothing
  /// changed: the view disagrees or epochgate has no listener for `leader`.
  virtual bool hint_leader(std::string_view topic, const codec::Uuid& id, int32_t partition,
                           int32_t leader, codec::ProduceResponse::PartitionProduceResponse& p,
                           std::vector<codec::ProduceResponse::NodeEndpoint>& endpoints) {
    return false;
  }
};

}  // namespace epochgate::proxy
