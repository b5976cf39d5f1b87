// proxy/app/app_tls.h: the process's TLS wiring, kept out of the App: the
// TLS metrics, the contexts' reloader (file watch, SIGHUP) and, in one-port
// SNI mode, the broker host names. The App asks it where a node is
// advertised and what /debug/config shows about certificates. Runs on the
// control loop; never touches a connection.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/config.h"
#include "proxy/core/endpoint_mapper.h"
#include "proxy/tls/sni_names.h"
#include "proxy/tls/tls_reloader.h"

namespace prometheus {
class Registry;
}
namespace epochgate::metrics {
class TlsMetrics;
}

namespace epochgate::proxy {
struct WorkerContext;
}

namespace epochgate::proxy::tls {

class AppTls {
 public:
  AppTls(std::shared_ptr<prometheus::Registry> registry);
  ~AppTls();

  /// Loads the contexts `c` asks for and starts watching their files. False
  /// with the file's error (start-up fails: never serve without the TLS
  /// the config asks for).
  bool start(uv_loop_t* loop, const config::Config& c, std::string& error);
  /// Closes the watches; `done` runs when they are closed.
  void close(std::function<void()> done);

  /// SNI mode: how a routed broker name is checked against the cluster
  /// (called on worker threads, so it must be thread-safe). Before start().
  void set_node_exists(std::function<bool(int32_t node_id)> exists) {
    node_exists_ = std::move(exists);
  }
  /// What workers need: contexts, metrics, SNI names, plaintext rule.
  void fill(WorkerContext& ctx) const;
  /// The reloader (null before start or without any TLS).
  TlsReloader* reloader() { return reloader_.get(); }
  metrics::TlsMetrics* metrics() { return metrics_.get(); }

  /// One-port SNI mode: no per-node listeners.
  bool sni_mode() const { return sni_.has_value(); }
  /// SNI mode: node `node_id`'s advertised address (its host name on the
  /// bootstrap port `port`).
  AdvertisedAddress sni_address(int32_t node_id, int32_t port) const;
  /// `config_json` (an object) with "tls_files" added: the loaded
  /// certificate files' subjects and expiry.
  std::string add_debug(std::string config_json) const;

 private:
  std::unique_ptr<metrics::TlsMetrics> metrics_;
  std::unique_ptr<TlsReloader> reloader_;
  std::optional<SniNames> sni_;
  std::function<bool(int32_t)> node_exists_;
  bool client_tls_ = false;
  bool plaintext_loopback_ = false;
  uint32_t handshake_timeout_ms_ = 0;
};

}  // namespace epochgate::proxy::tls
