// proxy/session/session_host.h: what a session's request path and response path
// (proxy/session/request_path.h, proxy/session/response_path.h) ask of the Session that
// wires them: closing, holding, the SASL bookkeeping that spans both
// directions, and the KIP-951 version bridging the broker's ApiVersions
// answer decides and the request path applies. Interface only.
#pragma once

#include <string>

#include "metrics/close_reason.h"
#include "proxy/session/sasl_framing.h"

namespace epochgate::proxy {

/// Why a session closes: one list with the metric label values and log
/// words (metrics/close_reason.h).
using CloseReason = metrics::CloseReason;

/// Versions the session bridges for a broker that predates KIP-951
/// (policy.kip951_bridge): Produce v10 sent as v9, Fetch v16 as v15.
struct BrokerBridging {
  bool produce = false;
  bool fetch = false;
};

/// The session, as its two paths see it. Calls happen on the loop thread
/// from inside the paths' own handling; each may close the session, after
/// which the paths touch nothing but their return value.
class SessionHost {
 public:
  virtual ~SessionHost() = default;
  /// Bad bytes from a peer: count `reason`, log `detail` (rate-limited), close.
  virtual void frame_error(CloseReason reason, const std::string& detail) = 0;
  /// Closes both sides, counting `reason`.
  virtual void close(CloseReason reason) = 0;
  /// Stops reading the client and closes once what is queued upstream is written.
  virtual void close_once_upstream_written(CloseReason reason) = 0;
  /// The policy holds the current request for a metadata refresh: stop
  /// taking requests and offer it again shortly.
  virtual void hold_request() = 0;
  /// A client's own (passed-through) SASL login ended one way or another.
  virtual void count_client_login(SaslLoginOutcome outcome) = 0;
  /// A SASL answer reached the client: held client frames may flow again.
  virtual void sasl_answered() = 0;
  /// Responses went to the client from outside the upstream read path (a
  /// reroute's answer completed them): the session re-checks its drain and
  /// resumes reading the client if the in-flight limit paused it.
  virtual void responses_flushed() = 0;
  /// What a request held for order waited on may have changed: offer it
  /// again on the next loop turn instead of at the hold timer.
  virtual void reoffer_held() = 0;
};

}  // namespace epochgate::proxy
