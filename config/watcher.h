// config/watcher.h: hot reload. On SIGHUP, and when the config file changes
// (uv_fs_event on its directory, debounced; a save by an editor or a
// Kubernetes ConfigMap swap both count), the file is loaded again through the
// caller's loader (normally load_effective_config, so flags still win). A
// valid result is handed to on_valid; an invalid one to on_invalid, and the
// running config stays. Every attempt is counted in
// epochgate_config_reloads_total{result}. Never applies anything itself.
//
// What applies live and what needs a restart is the Reload column of
// config/keys.def (today live: policy.*, limits.*, refresher.*, logging.*,
// drain_timeout_ms; the rest needs a restart: a change there is reported in
// `needs_restart` and the running value is kept in the applied config).
#pragma once

#include <uv.h>

#include <functional>
#include <string>
#include <vector>

#include "common/bounded_debounce.h"
#include "config/config.h"
#include "config/loader.h"

namespace epochgate::metrics {
class ProxyMetrics;
}

namespace epochgate::config {

/// Settings (paths as in the YAML) that differ between `running` and `next`
/// and only take effect after a restart. Empty when everything applies live.
std::vector<std::string> restart_required_changes(const Config& running, const Config& next);

/// `running` with every live section taken from `next`: what a reload can
/// apply without touching listeners.
Config merge_live(const Config& running, const Config& next);

struct WatcherCallbacks {
  /// A valid reload: `applied` is merge_live(running, loaded); `needs_restart`
  /// lists the settings whose change was not applied (see above).
  std::function<void(const Config& applied, const std::vector<std::string>& needs_restart)>
      on_valid;
  /// A refused reload, with every problem (file:line:col).
  std::function<void(const std::vector<Problem>& problems)> on_invalid;
};

struct WatcherOptions {
  /// File events closer than this (ms) are one reload.
  uint32_t debounce_ms = BoundedDebounce::kQuietMs;
  /// A burst of events is acted on no later than this (ms) after its first
  /// one, so a file written beside the config (a log) cannot hold a change back.
  uint32_t max_wait_ms = BoundedDebounce::kMaxMs;
  bool watch_file = true;      ///< uv_fs_event on the file's directory
  bool watch_sighup = true;    ///< uv_signal for SIGHUP
};

/// Watches one config file on `loop`. Not thread-safe: use it on the loop's
/// thread; callbacks run there. Reading the file is synchronous (it is small).
class ConfigWatcher {
 public:
  using Loader = std::function<LoadResult()>;

  /// `running`: the config in effect now. `loader`: produces the new config
  /// (e.g. [cli]{ return load_effective_config(cli.config_path, cli.overrides); }).
  /// `metrics` may be null.
  ConfigWatcher(uv_loop_t* loop, std::string path, Config running, Loader loader,
                WatcherCallbacks callbacks, metrics::ProxyMetrics* metrics = nullptr,
                WatcherOptions options = {});
  /// Call close() and let it finish before destroying.
  ~ConfigWatcher();
  ConfigWatcher(const ConfigWatcher&) = delete;
  ConfigWatcher& operator=(const ConfigWatcher&) = delete;

  /// Starts the signal and file watches. Returns 0 or a libuv error code.
  int start();
  /// Reloads now, as SIGHUP does (even if the file bytes did not change).
  void reload(const char* trigger = "manual");
  /// Closes every handle; `on_closed` runs when all are closed.
  void close(std::function<void()> on_closed = nullptr);

  const Config& running() const { return running_; }
  uint64_t reloads_ok() const { return reloads_ok_; }
  uint64_t reloads_failed() const { return reloads_failed_; }

 private:
  static void on_signal(uv_signal_t* h, int signum);
  static void on_fs_event(uv_fs_event_t* h, const char* filename, int events, int status);
  static void on_debounce(uv_timer_t* h);
  static void on_handle_closed(uv_handle_t* h);
  void file_changed();
  std::string read_file_or_marker() const;

  uv_loop_t* loop_;
  std::string path_;
  std::string dir_;
  std::string base_;
  Config running_;
  Loader loader_;
  WatcherCallbacks callbacks_;
  metrics::ProxyMetrics* metrics_;
  WatcherOptions options_;
  std::string last_content_;

  uv_signal_t signal_{};
  uv_fs_event_t fs_event_{};
  uv_timer_t debounce_{};
  BoundedDebounce burst_;
  bool started_ = false;
  bool closing_ = false;
  int open_handles_ = 0;
  std::function<void()> on_closed_;
  uint64_t reloads_ok_ = 0;
  uint64_t reloads_failed_ = 0;
};

}  // namespace epochgate::config
