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
#include <optional>
#include <vector>

#include "policy/reroute_order_guard.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/in_flight_queue.h"
#include "proxy/core/request_frame.h"
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
  /// One whole request: `data` is the payload after the 4-byte size
  /// prefix, which must precede it in the same buffer (the frame is
  /// forwarded from there, its version patched in place when bridged).
  /// Its header is read once (read_ids, read_header) into a RequestFrame
  /// that the policy's plan and the reroute share.
  Step handle(uint8_t* data, size_t size);
  /// True while a request handle() kept (kHold: for a refresh or for
  /// order) waits in the client input to be offered again. It was accepted
  /// from the client, so a drain carries it to its answer.
  bool holds_request() const { return hold_started_ns_ != 0 || order_hold_started_ns_ != 0; }
  /// A Produce decided on its head while its last partition's records are
  /// still arriving (proxy/session/request_stream.h): `f.data`/`f.size` hold
  /// the request up to that partition's records, passed as empty (a copy,
  /// not the client's buffer). True when the request goes upstream as it
  /// is: it was counted, decided and owed as forward() does, and the caller
  /// writes the client's own bytes. False: nothing was done or counted
  /// (a raw SASL token, a request held, a KIP-951 bridge, or a plan other
  /// than forwarding it unchanged); the frame is read whole and handled.
  bool forward_head(RequestFrame& f);

 private:
  /// What a request's plan hands on to its forwarding: the policy's context
  /// for the answer, the partitions to reroute, and the order-guard ticket
  /// of a request that was held for order (0: none).
  struct Planned {
    std::unique_ptr<EntryContext> context;
    std::shared_ptr<ReroutePlan> reroute;
    policy::Ticket ticket = 0;
  };

  /// Reads api key, version and correlation id, counts the request, and
  /// looks up its API table row. False when the session closed (truncated).
  bool read_ids(RequestFrame& f);
  /// Requests answered or refused before anything is forwarded: a client
  /// SaslHandshake while epochgate logs in for it, an ApiVersions newer than
  /// epochgate knows, an addressed API at a version it cannot decode.
  /// nullopt when the request goes on.
  std::optional<Step> answer_before_forwarding(const RequestFrame& f);
  /// Parses the header where the request is read further (Produce and Fetch
  /// bodies, decided versions, SaslHandshake), the acks and own wait, and
  /// the KIP-951 bridge's upstream version. False when the session closed.
  bool read_header(RequestFrame& f);
  /// The body facts read_header() reads of every Produce and Fetch: the
  /// own wait, a Produce's acks, the KIP-951 bridge's version. False when
  /// a Produce is too short to hold its acks.
  bool read_body_facts(RequestFrame& f);
  /// Asks the policy and carries out its plan (hold, forward as is or
  /// rewritten, answer locally, close for a fenced acks=0 Produce).
  Step follow_plan(RequestFrame& f, uint64_t now);
  /// Forwards the client's own bytes (bridged in place) and records what
  /// the client is owed.
  Step forward(RequestFrame& f, uint64_t now, Planned p);
  /// The policy's local answer (`frame`, size-prefixed) becomes the
  /// request's response, once its reroutes (if any) are in.
  void answer_locally(const RequestFrame& f, std::vector<uint8_t> frame, uint64_t now,
                      Planned& p);
  /// A fenced acks=0 Produce (kClose, kForwardThenClose): its stale
  /// partitions posted to their leaders when every one can go, else the
  /// connection closes as a broker's would (after the partitions it leads,
  /// for kForwardThenClose). A malformed request closes as a frame error.
  Step close_for_acks0(const RequestFrame& f, FencingHooks::RequestPlan& plan, Planned& p);
  /// The in-flight record of a forwarded request (none for acks=0), with
  /// its context, its local part (a split) and its reroute.
  void owe_answer(const RequestFrame& f, uint64_t now, Planned& p, bool local_part);
  /// The KIP-951 bridge: writes `f.upstream_version` into the request
  /// header at `payload` (a frame payload after its size prefix) and counts
  /// epochgate_version_downgrades_total; nothing when `f` is not bridged.
  void bridge_version(const RequestFrame& f, uint8_t* payload);
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
