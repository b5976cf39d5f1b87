// config/watcher.cc: SIGHUP and file-change driven reloads. File events are
// debounced (common/bounded_debounce.h) and compared by content, so an
// editor's burst of events, or a touch without a change, is at most one
// reload. Handles are closed only via close(); the watcher owns no config
// state beyond the running copy.
#include "config/watcher.h"

#include <csignal>
#include <fstream>
#include <sstream>

#include "config/keys.h"
#include "metrics/logging.h"
#include "metrics/proxy_metrics.h"

namespace epochgate::config {
// Both follow the Reload column of config/keys.def: a Restart key is
// reported by its top-level name (once), a Live key is copied.
std::vector<std::string> restart_required_changes(const Config& running, const Config& next) {
  std::vector<std::string> out;
  for (const KeySpec& k : config_keys()) {
    if (k.reload != Reload::kRestart || k.same == nullptr || k.same(running, next)) continue;
    const std::string top(k.top());
    if (out.empty() || out.back() != top) out.push_back(top);
  }
  return out;
}

Config merge_live(const Config& running, const Config& next) {
  Config merged = running;
  for (const KeySpec& k : config_keys()) {
    if (k.reload == Reload::kLive && k.copy != nullptr) k.copy(next, merged);
  }
  merged.source_file = next.source_file;
  return merged;
}

ConfigWatcher::ConfigWatcher(uv_loop_t* loop, std::string path, Config running, Loader loader,
                             WatcherCallbacks callbacks, metrics::ProxyMetrics* metrics,
                             WatcherOptions options)
    : loop_(loop),
      path_(std::move(path)),
      running_(std::move(running)),
      loader_(std::move(loader)),
      callbacks_(std::move(callbacks)),
      metrics_(metrics),
      options_(options) {
  burst_.quiet_ms = options_.debounce_ms;
  burst_.max_ms = options_.max_wait_ms;
  const auto slash = path_.find_last_of('/');
  dir_ = slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash));
  base_ = slash == std::string::npos ? path_ : path_.substr(slash + 1);
}

ConfigWatcher::~ConfigWatcher() = default;

std::string ConfigWatcher::read_file_or_marker() const {
  std::ifstream in(path_, std::ios::binary);
  if (!in) return std::string("\0missing", 8);  // cannot equal real YAML text
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int ConfigWatcher::start() {
  if (started_ || closing_) return UV_EALREADY;
  started_ = true;
  last_content_ = read_file_or_marker();
  uv_timer_init(loop_, &debounce_);
  debounce_.data = this;
  ++open_handles_;
  if (options_.watch_sighup) {
    uv_signal_init(loop_, &signal_);
    signal_.data = this;
    ++open_handles_;
    const int rc = uv_signal_start(&signal_, on_signal, SIGHUP);
    if (rc < 0) return rc;
  }
  if (options_.watch_file && !path_.empty()) {
    uv_fs_event_init(loop_, &fs_event_);
    fs_event_.data = this;
    ++open_handles_;
    // The directory, not the file: editors and ConfigMaps replace the file by
    // rename, which would orphan a watch on the old inode.
    const int rc = uv_fs_event_start(&fs_event_, on_fs_event, dir_.c_str(), 0);
    if (rc < 0) return rc;
  }
  return 0;
}

void ConfigWatcher::on_signal(uv_signal_t* h, int) {
  static_cast<ConfigWatcher*>(h->data)->reload("SIGHUP");
}

void ConfigWatcher::on_fs_event(uv_fs_event_t* h, const char*, int, int status) {
  auto* self = static_cast<ConfigWatcher*>(h->data);
  if (status < 0 || self->closing_) return;
  // Restarting the timer on every event is the debounce, bounded by
  // max_wait_ms after the burst's first event.
  const bool pending = uv_is_active(reinterpret_cast<uv_handle_t*>(&self->debounce_));
  const uint64_t delay = self->burst_.delay_ms(pending, uv_now(self->loop_));
  uv_timer_start(&self->debounce_, on_debounce, delay, 0);
}

void ConfigWatcher::on_debounce(uv_timer_t* h) {
  static_cast<ConfigWatcher*>(h->data)->file_changed();
}

void ConfigWatcher::file_changed() {
  std::string content = read_file_or_marker();
  if (content == last_content_) return;  // touched, or an unrelated file in the directory
  last_content_ = std::move(content);
  reload("file change");
}

void ConfigWatcher::reload(const char* trigger) {
  if (closing_) return;
  auto lg = metrics::logger("config");
  if (!path_.empty()) last_content_ = read_file_or_marker();
  LoadResult r = loader_();
  if (!r.ok()) {
    ++reloads_failed_;
    if (metrics_) metrics_->config_reload(false);
    metrics::log(*lg, spdlog::level::err, "config reload refused; the running config stays",
                 {{"trigger", trigger}, {"file", path_}, {"problems", r.problems.size()}});
    for (const Problem& p : r.problems) {
      metrics::log(*lg, spdlog::level::err, p.to_string(), {{"trigger", trigger}});
    }
    if (callbacks_.on_invalid) callbacks_.on_invalid(r.problems);
    return;
  }
  const std::vector<std::string> needs_restart = restart_required_changes(running_, r.config);
  running_ = merge_live(running_, r.config);
  ++reloads_ok_;
  if (metrics_) metrics_->config_reload(true);
  metrics::log(*lg, spdlog::level::info, "config reloaded",
               {{"trigger", trigger}, {"file", path_}});
  for (const std::string& s : needs_restart) {
    metrics::log(*lg, spdlog::level::warn,
                 "config change needs a restart to apply; keeping the running value",
                 {{"setting", s}});
  }
  if (callbacks_.on_valid) callbacks_.on_valid(running_, needs_restart);
}

void ConfigWatcher::on_handle_closed(uv_handle_t* h) {
  auto* self = static_cast<ConfigWatcher*>(h->data);
  if (--self->open_handles_ > 0) return;
  auto cb = std::move(self->on_closed_);
  self->on_closed_ = nullptr;
  if (cb) cb();  // may destroy the watcher: touch nothing after
}

void ConfigWatcher::close(std::function<void()> on_closed) {
  if (closing_) return;
  closing_ = true;
  on_closed_ = std::move(on_closed);
  if (open_handles_ == 0) {
    auto cb = std::move(on_closed_);
    on_closed_ = nullptr;
    if (cb) cb();
    return;
  }
  auto close_if = [](uv_handle_t* h) {
    if (h->loop != nullptr && !uv_is_closing(h)) uv_close(h, on_handle_closed);
  };
  close_if(reinterpret_cast<uv_handle_t*>(&debounce_));
  if (options_.watch_sighup) close_if(reinterpret_cast<uv_handle_t*>(&signal_));
  if (options_.watch_file && !path_.empty()) close_if(reinterpret_cast<uv_handle_t*>(&fs_event_));
}

}  // namespace epochgate::config
