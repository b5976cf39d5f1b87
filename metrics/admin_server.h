// metrics/admin_server.h: the admin HTTP/1.1 server (libuv + llhttp):
// /metrics, /healthz, /readyz, /debug/metadata, /debug/config. It runs on the
// loop it is given and calls the app's handlers on that loop's thread. It
// never touches Kafka traffic, never blocks the loop, and never trusts a
// client: request line, headers and bodies are bounded, slow or idle clients
// time out, and only GET and HEAD are served. Binds 127.0.0.1 by default.
// Probes always get a slot: past max_connections, a new connection closes the
// longest-idle one (else the one whose request started first) instead of
// being refused, and idle keep-alive connections close after a few seconds.
#pragma once

#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace prometheus {
class Registry;
}

namespace epochgate::metrics {

class ProxyMetrics;

/// Answer of the readiness handler: /readyz returns 200 "ready" or 503 with
/// "not ready: <reason>".
struct Readiness {
  bool ready = true;
  std::string reason;  ///< why not ready ("draining", "no metadata yet", ...)
};

/// Callbacks the app supplies; each runs on the admin loop's thread and must be
/// quick (it blocks the admin loop, not the data path). A null callback means:
/// metrics / debug_*: 404; healthz: always healthy; readyz: always ready.
/// A handler that throws yields a 500 for that request.
struct AdminHandlers {
  std::function<std::string()> metrics;  ///< Prometheus text (render_prometheus_text)
  std::function<bool()> healthz;         ///< false -> 503 "unhealthy"
  std::function<Readiness()> readyz;
  std::function<std::string()> debug_metadata;  ///< JSON: the metadata view
  std::function<std::string()> debug_config;    ///< JSON: effective config, secrets redacted
  /// A connection was closed to make room for a new one: "idle" (no request
  /// in progress) or "busy" (its request had started). For a metric and log.
  std::function<void(const char* why)> on_evicted;

  /// A metrics handler that serializes `registry` on every scrape, after
  /// folding `metrics`' latency histograms into it (may be null: none).
  static std::function<std::string()> metrics_from(std::shared_ptr<prometheus::Registry> registry,
                                                   ProxyMetrics* metrics = nullptr);
};

/// Serializes every family in `registry` in the Prometheus text format 0.0.4.
std::string render_prometheus_text(prometheus::Registry& registry);

/// Bounds of one admin connection. Defaults suit probes and scrapers.
struct AdminOptions {
  uint32_t max_connections = 64;                 ///< past it, the longest-idle connection is closed
  uint32_t max_url_bytes = 4096;                 ///< longer request target -> 414
  uint32_t max_header_bytes = 8192;              ///< names + values of all headers -> 431
  uint32_t max_headers = 64;                     ///< more header lines -> 431
  uint32_t max_body_bytes = 4096;                ///< larger body (any method) -> 413
  uint32_t request_timeout_ms = 10000;           ///< first byte of a request to its end -> 408
  uint32_t idle_timeout_ms = 5000;               ///< keep-alive connection with no request
  uint32_t linger_ms = 2000;                     ///< after a final response, wait this long for EOF
  uint64_t max_pending_write_bytes = 32u << 20;  ///< unread responses before we stop serving
  /// /debug/* answered only to loopback peers (127.0.0.0/8, ::1); others get
  /// 404, as if the endpoint did not exist.
  bool debug_loopback_only = false;
  /// Host header names /debug/* answers besides `localhost` and literal
  /// addresses: the admin listener's own host name. A request naming any
  /// other host gets 403, so a web page that rebinds its DNS name to this
  /// address (DNS rebinding) cannot read /debug from a browser.
  std::vector<std::string> debug_hosts;
};

/// True when `host_header` (a Host header value, port optional) is
/// `localhost`, a literal IPv4 or [IPv6] address, or one of `allowed`
/// (names compare case-insensitively).
bool debug_host_allowed(std::string_view host_header, const std::vector<std::string>& allowed);

/// True for 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8: peers inside the
/// host (the pod), which may read /debug/* when debug_loopback_only is set.
bool is_loopback_peer(const sockaddr_storage& peer);

/// Result of AdminServer::listen.
struct ListenResult {
  int error = 0;        ///< libuv error code (UV_EADDRINUSE, ...), 0 on success
  std::string message;  ///< human-readable reason when error != 0
  uint16_t port = 0;    ///< bound port (the ephemeral one when asked for 0)
  bool ok() const { return error == 0; }
};

/// HTTP/1.1 admin server. Usage on the admin loop's thread:
///   AdminServer admin(loop, handlers);
///   auto r = admin.listen("127.0.0.1", 9644);   // r.port, admin.bound_port()
///   ...; admin.close([]{ /* every handle closed */ });
/// Keep-alive and pipelining work (responses in request order).
/// Not thread-safe: call every method on the loop's thread.
class AdminServer {
 public:
  AdminServer(uv_loop_t* loop, AdminHandlers handlers, AdminOptions options = {});
  /// Closing is the owner's job (close()); a server destroyed while handles
  /// are open closes them and they free themselves when the loop runs.
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  /// Binds and listens on host:port ("127.0.0.1", "::1", "0.0.0.0", "localhost";
  /// port 0 = ephemeral). Call once.
  ListenResult listen(const std::string& host = "127.0.0.1", uint16_t port = 9644);
  /// Port actually bound, 0 before a successful listen().
  uint16_t bound_port() const;

  /// Stops listening and closes every connection. `on_closed` runs once every
  /// handle is closed (at once if none was open). Safe to destroy the server
  /// inside `on_closed`.
  void close(std::function<void()> on_closed = nullptr);

  /// Open client connections.
  std::size_t connection_count() const;
  /// Requests answered (any status) since start.
  uint64_t requests_served() const;
  /// TCP connections accepted since start (keep-alive reuse shows here).
  uint64_t connections_accepted() const;
  /// Connections closed to make room for a new one since start.
  uint64_t connections_evicted() const;

  struct Impl;

 private:
  Impl* impl_;  // self-deleting once its handles are closed when orphaned
};

}  // namespace epochgate::metrics
