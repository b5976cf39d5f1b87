// proxy/refresher.h: epochgate's own Metadata client (issue 4 item 3). Keeps
// one upstream connection (bootstrap brokers first, then any known broker),
// dialed by UpstreamDialer (connect timeout, answered ApiVersions), takes the
// Metadata version from that ApiVersions answer, and refreshes the view
// periodically for the topics it knows and urgently for topics a session
// flagged; urgent requests are coalesced and rate-limited. Runs on the main
// loop; request_urgent() may be called from any thread.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "policy/metadata_view.h"
#include "proxy/buffer_pool.h"
#include "proxy/connection.h"
#include "proxy/sasl_login.h"
#include "proxy/upstream_dialer.h"

namespace epochgate::metrics {
class ProxyMetrics;
}

namespace epochgate::proxy {

/// Periodic and urgent Metadata refreshes into a MetadataView.
class Refresher : public ConnectionOwner, private UpstreamDialer::Owner {
 public:
  Refresher(uv_loop_t* loop, std::shared_ptr<const config::Config> config,
            policy::MetadataView& view, metrics::ProxyMetrics* metrics);
  ~Refresher() override;

  /// First refresh now (all topics), then every interval_ms.
  void start();
  /// Asks for a refresh soon for `topics` (empty: the known topics). Thread-safe.
  void request_urgent(std::vector<std::string> topics, const char* trigger);
  /// Applies a reloaded config (interval, rate limit, enabled).
  void set_config(std::shared_ptr<const config::Config> config);
  /// Closes handles; `done` runs when all are closed.
  void stop(std::function<void()> done);
  /// Monotonic ms (uv_hrtime based) when the last Metadata response was
  /// learned; 0 before the first. Any thread.
  uint64_t last_completed_ms() const { return last_completed_ms_.load(); }
  /// False after every known broker failed the last refresh attempt; true
  /// again on the next answer. Any thread.
  bool reachable() const { return reachable_.load(); }
  /// True once a Metadata response from any broker was learned.
  bool loaded() const { return loaded_.load(); }
  /// Broker that answered last ("host:port"), for logs and /readyz.
  std::string last_broker() const;
  /// Called on the loop after each learned Metadata response (its brokers
  /// are the cluster's current node set: the listener registry follows them).
  void set_on_metadata(std::function<void(const codec::MetadataResponse&)> fn) {
    on_metadata_ = std::move(fn);
  }

  // ConnectionOwner
  void on_readable(Connection& c) override;
  void on_read_error(Connection& c, int status) override;
  void on_drained(Connection&) override {}
  void on_write_error(Connection& c, int status) override;
  void on_closed(Connection& c) override;

 private:
  enum class State { kIdle, kConnecting, kAwaitSasl, kAwaitMetadata, kReady };

  static void on_tick(uv_timer_t* t);
  static void on_async(uv_async_t* a);
  void maybe_refresh(uint64_t now_ms);
  void begin_refresh(const char* trigger);
  void connect_next();
  // UpstreamDialer::Owner
  void on_dial_attempt_failed(const UpstreamDialer::Failure& f) override;
  void on_dialed(std::unique_ptr<Connection> conn, size_t index,
                 const std::vector<int16_t>& max_versions) override;
  void on_dial_failed() override;
  void on_dialer_closed() override;
  void send_metadata();
  /// Logs in (upstream_sasl) on the open connection, then sends Metadata.
  void begin_login();
  void apply_login_step(SaslLoginStep step);
  void handle_frame(const uint8_t* frame, size_t size);
  void fail(const std::string& why);
  std::vector<config::HostPort> targets() const;

  uv_loop_t* loop_;
  std::shared_ptr<const config::Config> config_;
  policy::MetadataView& view_;
  metrics::ProxyMetrics* metrics_;
  BufferPool pool_{16 * 1024, 4};
  UpstreamDialer dialer_{loop_, pool_, *this};
  std::unique_ptr<Connection> conn_;
  std::vector<std::unique_ptr<Connection>> closing_;
  uv_timer_t tick_;
  uv_async_t async_;
  State state_ = State::kIdle;
  std::vector<config::HostPort> targets_;
  size_t target_index_ = 0;
  std::string broker_;
  int16_t metadata_version_ = 1;
  std::unique_ptr<SaslLogin> login_;     // the login under way, if any
  uint64_t relogin_at_ms_ = 0;           // 0: the session has no lifetime
  uint64_t session_ends_ms_ = 0;
  bool logged_in_ = false;               // on the current connection
  bool login_reported_ = false;          // first success logged at info
  int32_t next_correlation_ = 1;
  int32_t awaiting_correlation_ = 0;
  uint64_t request_started_ms_ = 0;
  uint64_t last_refresh_ms_ = 0;
  uint64_t last_attempt_ms_ = 0;
  uint64_t last_failed_ms_ = 0;
  bool startup_done_ = false;
  const char* trigger_ = "startup";
  std::atomic<bool> loaded_{false};
  std::atomic<bool> reachable_{true};
  std::atomic<uint64_t> last_completed_ms_{0};
  std::mutex mu_;                       // guards the urgent set (any thread)
  std::set<std::string> urgent_topics_;
  bool urgent_ = false;
  bool urgent_all_ = false;
  const char* urgent_trigger_ = "urgent";
  std::vector<std::string> in_flight_topics_;
  bool stopping_ = false;
  int open_handles_ = 0;
  std::function<void()> on_stopped_;
  std::function<void(const codec::MetadataResponse&)> on_metadata_;
  mutable std::mutex broker_mu_;
};

}  // namespace epochgate::proxy
