// proxy/tls/tls_services.h: what a worker's connections need to speak TLS,
// as one small value the worker context, the upstream dialer and the
// refresher carry: the contexts' source, the metrics, the SNI names and the
// plaintext rule. Plain pointers owned by the App (proxy/app/app_tls.h),
// which outlives every loop; all null when TLS is off on both sides.
#pragma once

#include <cstdint>
#include <functional>

namespace epochgate::metrics {
class TlsMetrics;
}

namespace epochgate::proxy::tls {

class TlsReloader;
class SniNames;

struct TlsServices {
  const TlsReloader* reloader = nullptr;  ///< current_server() / current_client()
  metrics::TlsMetrics* metrics = nullptr;
  const SniNames* sni = nullptr;          ///< one-port SNI routing (null: off)
  /// SNI routing: whether a broker node exists in the current metadata
  /// (thread-safe; unset: every name the pattern makes routes).
  std::function<bool(int32_t node_id)> node_exists;
  /// Client-facing TLS is configured: every accepted connection is TLS (or,
  /// with plaintext_loopback, a loopback peer's plaintext) or is closed.
  bool client_tls = false;
  bool plaintext_loopback = false;        ///< tls.plaintext_clients: loopback
  uint32_t handshake_timeout_ms = 10000;  ///< tls.handshake_timeout_ms
};

}  // namespace epochgate::proxy::tls
