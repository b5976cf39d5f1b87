// proxy/tls/tls_reloader.h: owns the process's current TLS contexts (the
// client-facing server context and the upstream client context) and
// replaces them when their files change (uv_fs_event on each file's
// directory, which also sees a Kubernetes Secret's ..data swap; debounced,
// but never postponed past a second by a directory that keeps changing)
// and on SIGHUP. A reload builds new contexts first: new connections use
// them, established ones keep the context their SSL holds. A file that fails
// to load or does not match its key is refused with the file name and
// OpenSSL's reason, the old contexts stay, and the refusal is counted
// (epochgate_tls_reloads_total{result="refused"}). Runs on the control loop;
// current_*() may be called from any thread.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/bounded_debounce.h"
#include "config/config.h"
#include "proxy/tls/tls_context.h"

namespace epochgate::metrics {
class TlsMetrics;
}

namespace epochgate::proxy::tls {

class TlsReloader {
 public:
  /// `metrics` may be null. Nothing is loaded until load().
  TlsReloader(uv_loop_t* loop, config::TlsConfig tls, config::UpstreamTlsConfig upstream,
              metrics::TlsMetrics* metrics);
  ~TlsReloader();
  TlsReloader(const TlsReloader&) = delete;
  TlsReloader& operator=(const TlsReloader&) = delete;

  /// Builds the contexts the config asks for (start-up). False with the
  /// first file's error: start-up fails rather than serve without TLS.
  bool load(std::string& error);
  /// Rebuilds both contexts from the files now; on any error keeps every
  /// old context, logs the refusal and returns false with `error`.
  /// Unchanged file bytes skip the rebuild (returns true) unless `force`.
  bool reload(const char* trigger, bool force, std::string* error = nullptr);
  /// Starts the file watches, SIGHUP and the expiry gauge's refresh timer.
  /// Returns 0 or the first libuv error (the rest still run).
  int start();
  /// Closes every handle; `done` runs when all are closed.
  void close(std::function<void()> done = nullptr);

  /// The server context for new client connections (null: client TLS off).
  std::shared_ptr<const TlsContext> current_server() const;
  /// The client context for new upstream connections (null: upstream TLS off).
  std::shared_ptr<const TlsContext> current_client() const;
  /// JSON array of the loaded files: setting, path, subject, issuer, DNS
  /// names, notBefore/notAfter (unix seconds) and seconds to expiry. Never
  /// key material.
  std::string files_json() const;
  uint64_t reloads_ok() const { return reloads_ok_; }
  uint64_t reloads_refused() const { return reloads_refused_; }

 private:
  struct Watch;
  bool build(std::shared_ptr<const TlsContext>& server, std::shared_ptr<const TlsContext>& client,
             std::string& error) const;
  void publish_metrics();
  std::vector<std::string> paths() const;
  std::string fingerprint() const;
  static void on_fs_event(uv_fs_event_t* h, const char* filename, int events, int status);
  static void on_debounce(uv_timer_t* t);
  static void on_expiry_tick(uv_timer_t* t);
  static void on_signal(uv_signal_t* s, int signum);
  static void on_handle_closed(uv_handle_t* h);

  uv_loop_t* loop_;
  config::TlsConfig tls_;
  config::UpstreamTlsConfig upstream_;
  metrics::TlsMetrics* metrics_;
  mutable std::mutex mu_;
  std::shared_ptr<const TlsContext> server_;
  std::shared_ptr<const TlsContext> client_;
  std::string fingerprint_;
  std::vector<std::unique_ptr<Watch>> watches_;
  uv_timer_t debounce_{};
  BoundedDebounce burst_;  ///< when a burst of certificate-file events reloads
  uv_timer_t expiry_{};
  uv_signal_t sighup_{};
  bool started_ = false;
  int open_handles_ = 0;
  std::function<void()> on_closed_;
  uint64_t reloads_ok_ = 0;
  uint64_t reloads_refused_ = 0;
};

}  // namespace epochgate::proxy::tls
