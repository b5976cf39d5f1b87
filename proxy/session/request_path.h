// proxy/session/request_path.h: a session's client-to-broker direction for one whole
// request frame at a time: SASL framing, locally answered ApiVersions, the
// checks a request must pass before it may be forwarded, the policy's plan
// (hold, rewrite, split, answer, close), KIP-951 version bridging, and the
// in-flight record of what the client is owed. Forwards unchanged frames
// from the buffer they were read into. Never reads a socket and never
// writes to the client (answers wait in the in-flight queue for the
// response path); never answers an acks=0 Produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "policy/reroute_order_guard.h"
#include "proxy/core/in_flight_queue.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/connection.h"
#include "proxy/session/sasl_framing.h"
#include "proxy/session/session_host.h"

namespace epochgate::proxy {

struct ReroutePlan;

/// Handles the client's requests for one session (loop thread only).
class RequestPath {
 public:
  RequestPath(WorkerContext& ctx, int32_t node_id, Connection& client, InFlightQueue& in_flight,
              SaslFraming& sasl, const BrokerBridging& bridging, SessionHost& host);
  /// Unparks a request still held for order (its session closed).
  ~RequestPath();

  /// The upstream connection the requests go to, once it is open.
  void attach_upstream(Connection& upstream) { upstream_ = &upstream; }

  /// What became of a request frame.
  enum class Step {
    kConsumed,  ///< forwarded or answered: the caller drops the frame
    kClosed,    ///< the session closed (bad request, fenced acks=0)
    kHold,      ///< held for a metadata refresh: keep it, offer it again later
  };
  /// One whole request: `frame` is the payload after the 4-byte size
  /// prefix, which must precede it in the same buffer (the frame is
  /// forwarded from there, its version patched in place when bridged).
  Step handle(uint8_t* frame, size_t size);
  /// True while a request handle() kept (kHold: for a refresh or for
  /// order) waits in the client input to be offered again. It was accepted
  /// from the client, so a drain carries it to its answer.
  bool holds_request() const { return hold_started_ns_ != 0 || order_hold_started_ns_ != 0; }

 private:
  /// Forwards a raw SASL token (SaslHandshake v0 framing) as it is.
  Step forward_raw_sasl_token(uint8_t* frame, size_t size);
  /// Hands the partitions `plan` reroutes for request `e` to the worker's
  /// Rerouter, under `ticket` (taken when it was first held for order; 0:
  /// a new one).
  void start_reroute(InFlightRequest& e, std::shared_ptr<ReroutePlan> plan, policy::Ticket ticket);
  /// True (the request held, offered again later) when a partition of
  /// `plan` must wait for an earlier write of its stream (Rerouter::order_wait),
  /// within reroute.max_hold_ms for a wait behind the client's own path.
  bool hold_for_order(ReroutePlan& plan, uint64_t now);
  /// The request held for order goes (or never waited): forgets its hold
  /// and unparks its streams (its ticket stays for start_reroute).
  void end_order_hold();
  /// Why this client's writes may not travel on epochgate's own connection
  /// ("identity"), or nullptr when they may.
  const char* reroute_refusal() const;
  /// A client SaslHandshake while epochgate logs in for the client:
  /// answered ILLEGAL_SASL_STATE.
  void refuse_client_sasl(int32_t corr, int16_t version);

  WorkerContext& ctx_;
  int32_t node_id_;
  Connection& client_;
  Connection* upstream_ = nullptr;
  InFlightQueue& in_flight_;
  SaslFraming& sasl_;
  const BrokerBridging& bridging_;
  SessionHost& host_;
  uint64_t hold_started_ns_ = 0;  // the held request's first offer; 0: none held
  uint64_t order_hold_started_ns_ = 0;  // held for order (reroute) since; 0: not
  policy::Ticket order_ticket_ = 0;     // the held request's guard ticket; 0: none
  std::vector<policy::StreamKey> parked_;  // its streams parked in the guard
};

}  // namespace epochgate::proxy
