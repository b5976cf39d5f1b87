// proxy/app/refresher.h: epochgate's own Metadata client. Keeps
// one upstream connection (bootstrap brokers first, then any known broker)
// through a KafkaClient (connect timeout, answered ApiVersions, upstream_sasl
// login and its renewal, the Metadata version from the broker's ApiVersions
// answer), and refreshes the view periodically for the topics it knows and
// urgently for topics a session flagged; urgent requests are coalesced and
// rate-limited. Runs on the main loop; request_urgent() may be called from
// any thread. Never writes to the wire itself: the client owns the socket.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "policy/metadata_view.h"
#include "proxy/client/kafka_client.h"
#include "proxy/core/confirm_limiter.h"
#include "proxy/core/refresh_requests.h"
#include "proxy/core/refresh_schedule.h"
#include "proxy/net/buffer_pool.h"

namespace epochgate::metrics {
class ProxyMetrics;
}

namespace epochgate::proxy {

/// Periodic and urgent Metadata refreshes into a MetadataView.
class Refresher : public RefreshRequests, private KafkaClientObserver {
 public:
  Refresher(uv_loop_t* loop, std::shared_ptr<const config::Config> config,
            policy::MetadataView& view, metrics::ProxyMetrics* metrics);
  ~Refresher() override;
  Refresher(const Refresher&) = delete;
  Refresher& operator=(const Refresher&) = delete;

  /// A first refresh now (brokers only: the view learns topics from
  /// traffic), then one naming every topic in the view interval_ms +-10%
  /// after the last such refresh.
  void start();
  /// TLS for the refresher's broker connections (upstream_tls); before start().
  void set_tls(const tls::TlsServices& tls) { client_.set_tls(tls); }
  /// Asks for a refresh soon for `topics` (empty: the known topics). Thread-safe.
  void request_urgent(std::vector<std::string> topics, const char* trigger) override;
  /// request_urgent for topics a client's epoch-less Metadata reported
  /// moved (their entries are suspect and fence nothing until a refresh
  /// confirms them): the refresh goes at once, without waiting out
  /// refresher.urgent_min_interval_ms, for a topic not confirmed so within
  /// that interval and while fewer than ConfirmLimiter::kBurst such
  /// refreshes went in it; otherwise it waits like any urgent refresh.
  /// Thread-safe.
  void request_confirm(std::vector<std::string> topics, const char* trigger) override;
  /// Applies a reloaded config (interval, rate limit, enabled) and arms the
  /// timer for the next refresh it makes due.
  void set_config(std::shared_ptr<const config::Config> config);
  /// Sets epochgate_sasl_session_expiry_seconds from the session the broker
  /// granted epochgate's own connection (KIP-368), as of `now_ms`
  /// (monotonic ms); nothing without a session lifetime. Loop thread: the
  /// app's housekeeping calls it each second, as the refresher's timer runs
  /// only when a refresh is due.
  void report_session(uint64_t now_ms);
  /// Closes handles; `done` runs when all are closed.
  void stop(std::function<void()> done);
  /// Monotonic ms (uv_hrtime based) when the last Metadata response was
  /// learned; 0 before the first. Any thread.
  uint64_t last_completed_ms() const override { return last_completed_ms_.load(); }
  /// False after every known broker failed the last refresh attempt; true
  /// again on the next answer. Any thread.
  bool reachable() const { return reachable_.load(); }
  /// True once a Metadata response from any broker was learned.
  bool loaded() const { return loaded_.load(); }
  /// True once a round ended with brokers that answered ApiVersions and then
  /// closed the connection at the Metadata request, before any view loaded:
  /// what a Kafka SASL listener does to a client that has not logged in.
  /// Any thread.
  bool closed_at_metadata_seen() const { return closed_at_metadata_seen_.load(); }
  /// Broker that answered last ("host:port"), for logs and /readyz.
  std::string last_broker() const;
  /// Why the last refresh round failed ("SASL login (PLAIN) failed: ...",
  /// "no broker reachable (...)"); "" after a round a broker answered.
  /// For /readyz. Any thread.
  std::string last_round_error() const;
  /// Called on the loop after each learned Metadata response (its brokers
  /// are the cluster's current node set: the listener registry follows them).
  void set_on_metadata(std::function<void(const codec::MetadataResponse&)> fn) {
    on_metadata_ = std::move(fn);
  }

 private:
  enum class State { kIdle, kAwaitMetadata, kReady };

  static void on_tick(uv_timer_t* t);
  static void on_async(uv_async_t* a);
  /// Starts what is due at `now_ms` (RefreshSchedule), if anything.
  void maybe_refresh(uint64_t now_ms);
  /// The state RefreshSchedule decides on, with the current config.
  RefreshSchedule schedule() const;
  /// Arms the one-shot timer for the next moment a refresh is due (at once
  /// when one is due now); stops it while a refresh is in flight, the
  /// refresher is off or stopping. After anything that moves that moment:
  /// an answer or failure, an urgent request, a config reload.
  void arm();
  /// Epoch-less move reports wait: may their refresh skip the urgent
  /// interval (`interval_ms`) at `now_ms`? Records what it admits and
  /// forgets the reports it looked at (the refresh takes their topics
  /// either way, now or at the interval).
  bool confirm_now(uint64_t now_ms, uint64_t interval_ms);
  /// interval_ms moved by this round's jitter (within +-10%, mean unchanged),
  /// so sidecars started together do not refresh together for ever.
  uint64_t periodic_due_ms(uint32_t interval_ms) const;
  /// Drops topics unused for refresher.topic_idle_ms from the view (before
  /// a refresh that names every known topic collects them), counts and logs
  /// them.
  void forget_unused_topics(uint64_t now_ms);
  void begin_refresh(const char* trigger);
  void connect_next();
  // KafkaClientObserver
  void on_dial_attempt_failed(const UpstreamDialer::Failure& f) override;
  void on_connected(size_t index, const ApiVersionRanges& versions) override;
  void on_login(const SaslLoginStep& result, bool again, bool offered) override;
  void on_connection_lost(ClientError error, const std::string& why) override;
  /// The client's options from the current config, dialing `targets`.
  KafkaClientOptions client_options(std::vector<config::HostPort> targets) const;
  void send_metadata();
  void on_metadata_answer(ClientResult<codec::MetadataResponse>&& r);
  void learn(const codec::MetadataResponse& m);
  void fail(const std::string& why);
  std::vector<config::HostPort> targets() const;

  uv_loop_t* loop_;
  std::shared_ptr<const config::Config> config_;
  policy::MetadataView& view_;
  metrics::ProxyMetrics* metrics_;
  // No large buffers kept: a Metadata answer comes every interval_ms (30 s),
  // and nothing trims this pool (the workers' sweeps trim theirs).
  BufferPool pool_{16 * 1024, 4, 0};
  KafkaClient client_;
  uv_timer_t tick_;  // one-shot, armed by arm() for the next due refresh
  uv_async_t async_;
  State state_ = State::kIdle;
  std::vector<config::HostPort> targets_;
  size_t target_index_ = 0;
  std::string broker_;
  int16_t metadata_version_ = 1;
  bool login_reported_ = false;          // first success logged at info
  uint64_t last_refresh_ms_ = 0;       // any refresh: the urgent rate limit
  // A refresh that named every known topic (periodic, urgent for all,
  // startup): the periodic clock. Urgent refreshes of a few topics do not
  // reset it, or a partition whose leader keeps moving would starve the
  // others' refresh until their entries are too old to fence.
  uint64_t last_full_refresh_ms_ = 0;
  bool in_flight_all_ = false;         // the refresh in flight names every known topic
  std::minstd_rand rng_{std::random_device{}()};
  std::uniform_int_distribution<int> jitter_{-100, 100};  // per mille of interval_ms
  int jitter_permille_ = jitter_(rng_);  // drawn again at each periodic refresh
  uint64_t last_attempt_ms_ = 0;
  uint64_t last_failed_ms_ = 0;
  bool startup_done_ = false;
  // Of the current round over the brokers: how many answered epochgate's
  // ApiVersions and then closed the connection at its Metadata request (what
  // a broker that requires SASL does to a client that did not log in), and
  // the last failure, for the warning when every broker failed.
  size_t closed_at_metadata_ = 0;
  size_t connected_in_round_ = 0;  // brokers that answered ApiVersions this round
  std::string login_error_;        // this round's refused SASL login, if any
  std::string round_error_;        // last failed round's reason (broker_mu_)
  uint64_t retry_delay_ms_ = 0;    // backoff after failed rounds; 0 after a success
  std::string last_failure_;
  const char* trigger_ = "startup";
  std::atomic<bool> loaded_{false};
  std::atomic<bool> closed_at_metadata_seen_{false};
  std::atomic<bool> reachable_{true};
  std::atomic<uint64_t> last_completed_ms_{0};
  mutable std::mutex mu_;               // guards the urgent set (any thread)
  std::set<std::string> urgent_topics_;
  bool urgent_ = false;
  bool urgent_all_ = false;
  // Topics of request_confirm not yet looked at by confirm_now (loop
  // thread, which reads the config): the pending urgent refresh may skip
  // the interval for them.
  std::set<std::string> confirm_topics_;
  ConfirmLimiter confirm_limiter_;  // under mu_
  const char* urgent_trigger_ = "urgent";
  std::vector<std::string> in_flight_topics_;
  bool stopping_ = false;
  int open_handles_ = 0;
  std::function<void()> on_stopped_;
  std::function<void(const codec::MetadataResponse&)> on_metadata_;
  mutable std::mutex broker_mu_;
};

}  // namespace epochgate::proxy
