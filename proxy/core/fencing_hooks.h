// proxy/core/fencing_hooks.h: the seam between a session and the fencing policy
// (policy/ decides, this seam applies). The session calls plan_request() for
// every request the API table (codec/api_table.h) marks decided, and the
// response hooks for the responses it learns from or must merge. The hooks
// take any hinted response as one variant (codec::HintedResponse, generated),
// so the seam does not grow with the APIs. Implementations run on the
// session's loop thread and must not block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codec/header.h"
#include "codec/messages/api_traits.h"
#include "codec/messages/metadata_response.h"
#include "metrics/close_reason.h"
#include "proxy/core/in_flight_queue.h"

namespace epochgate::proxy {

class Connection;

class BufferBudget;
struct ReroutePlan;

/// Policy hooks a session calls; see PolicyFencing (proxy/fencing/policy_fencing.h).
class FencingHooks {
 public:
  virtual ~FencingHooks() = default;

  /// One request frame (payload after the size prefix) on the listener of `node_id`.
  struct RequestInput {
    int32_t node_id = -1;
    int16_t api_key = 0;
    int16_t api_version = 0;
    int32_t correlation_id = 0;
    const uint8_t* frame = nullptr;
    size_t size = 0;
    bool expects_response = true;
    bool after_hold = false;  ///< held for hold_timeout_ms already: never hold again
    uint64_t hold_started_ms = 0;  ///< monotonic ms the request started waiting (0: not held)
    BufferBudget* budget = nullptr;  ///< where the decoded request's memory is counted (may be null)
    /// The client's connection (may be null): fence log lines name its
    /// address, read only when a fence is logged.
    const Connection* client = nullptr;
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
  };

  virtual RequestPlan plan_request(const RequestInput& in) = 0;

  /// Learns leaders, epochs and upstream node addresses (before rewriting).
  virtual void learn_metadata(const codec::MetadataResponse& m, int16_t version) = 0;

  /// Learns from a broker response BEFORE its addresses are rewritten
  /// (NodeEndpoints then still name upstream brokers): CurrentLeader hints,
  /// leader errors, node addresses. `version` is the upstream version.
  virtual void learn_response(codec::HintedResponse m, int16_t version, int32_t node_id) = 0;

  /// Amends a response AFTER address rewriting, at the client's version: merges
  /// a split request's local part, backfills missing hints (epochgate
  /// addresses). Returns true if the response changed.
  virtual bool amend_response(InFlightEntry& e, codec::HintedResponse m, int16_t client_version,
                              int32_t node_id) = 0;
  /// Any other response the table marks learned or decided, or with a split
  /// context (responses without addresses or hints):
  /// decode, learn, merge. `node_id` is the broker that answered (-1: the
  /// bootstrap listener). Sets `changed` and fills `out` (size-prefixed) when
  /// the bytes change. Returns false with `error` on a malformed response (close).
  /// The view's leader and epoch of partition `partition` of topic `topic`
  /// (by id when `topic` is empty); false when the view knows none. With
  /// `refresh`, asks for an urgent refresh of the topic too.
  virtual bool leader_of(std::string_view topic, const codec::Uuid& id, int32_t partition,
                         int32_t& leader, int32_t& epoch, bool refresh) {
    return false;
  }
  virtual bool on_other_response(InFlightEntry& e, int32_t node_id, codec::ResponseHeader& h,
                                 const uint8_t* body, size_t len, std::vector<uint8_t>& out,
                                 bool& changed, std::string& error) = 0;
};

}  // namespace epochgate::proxy
