// metrics/tls_metrics.h: the `epochgate_tls_*` families: handshakes by side,
// result and reason, handshake duration, loaded certificates' time to
// expiry, certificate reloads and refused renegotiations. Label values are bounded: side is
// "client" (connections clients opened to epochgate) or "upstream"
// (epochgate's to brokers); reason is one of the TLS engine's failure names
// (proxy/tls/tls_engine.h); file is a configured path. Never a peer address.
// Counters and the histogram are thread-safe (workers); gauges are set by
// the control loop.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "metrics/side.h"

namespace prometheus {
class Registry;
}

namespace epochgate::metrics {

class TlsMetrics {
 public:
  explicit TlsMetrics(std::shared_ptr<prometheus::Registry> registry);
  ~TlsMetrics();

  /// epochgate_tls_handshakes_total{side, result="ok"|"failed", reason}
  /// (reason "ok" for a success) and, for a success,
  /// epochgate_tls_handshake_duration_seconds{side}.
  void handshake(Side side, std::string_view reason, double seconds);
  /// epochgate_tls_certificate_expiry_seconds{file}: seconds from `now_unix`
  /// to each file's earliest notAfter (negative once expired). Replaces the
  /// previous set of files of that `owner` ("tls" or "upstream_tls").
  void set_certificates(const std::string& owner, const std::map<std::string, int64_t>& not_after,
                        int64_t now_unix);
  /// Recomputes every expiry gauge for `now_unix`.
  void refresh_expiry(int64_t now_unix);
  /// epochgate_tls_reloads_total{result="ok"|"refused"}.
  void reload(bool ok);
  /// epochgate_tls_renegotiations_refused_total{side}: a TLS 1.2 peer asked
  /// to renegotiate (RFC 5746) and was answered no_renegotiation.
  void renegotiation_refused(Side side);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace epochgate::metrics
