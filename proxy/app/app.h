// proxy/app/app.h: one epochgate process: listeners, worker loops, the metadata
// view and its refresher, the fencing policy, the admin server, signals,
// config reload and drain. The main thread runs the control loop (refresher,
// admin, the acceptor of every listener); sessions live on the workers.
// Implements the services sessions call back into. Listeners are created
// where nodes are learned (the refresher's brokers, addresses in responses),
// never while policy builds hints: advertised() is a lookup.
#pragma once

#include <uv.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config/cli.h"
#include "config/config.h"
#include "policy/endpoint_resolver.h"
#include "policy/metadata_view.h"
#include "proxy/app/acceptor.h"
#include "proxy/app/listener_registry.h"
#include "proxy/app/worker.h"
#include "proxy/core/endpoint_mapper.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/buffer_budget.h"

namespace prometheus {
class Registry;
}
namespace epochgate::metrics {
class AdminServer;
class ListenerMetrics;
class ProxyMetrics;
struct Readiness;
}  // namespace epochgate::metrics
namespace epochgate::config {
class ConfigWatcher;
}

namespace epochgate::proxy {

class Refresher;
class PolicyFencing;
namespace tls {
class AppTls;
}

/// The application. Construct, then run() until a signal ends it.
class App : public EndpointMapper, public UpstreamDirectory, public policy::EndpointResolver {
 public:
  explicit App(config::Config config);
  ~App() override;

  /// Where a reload reads from: the --config file and the flags that override it.
  /// Without a file, only flags configure the process and nothing is watched.
  void set_reload_source(std::string path, config::CliOverrides overrides);

  /// Where start() writes the bound addresses ("epochgate ready
  /// bootstrap=HOST:PORT admin=HOST:PORT|off"): a file replaced atomically,
  /// "-" for stdout, "" for nowhere (the default).
  void set_ready_file(std::string path) { ready_file_ = std::move(path); }

  /// Binds listeners and admin, starts workers and the refresher, writes the
  /// ready file, and runs until drained after SIGTERM/SIGINT. Returns the exit
  /// code: 0 after a drain, 1 when start-up failed (reason logged).
  int run();

  // EndpointMapper
  bool advertise(int32_t node_id, std::string_view upstream_host, int32_t upstream_port,
                 AdvertisedAddress& out) override;
  // UpstreamDirectory
  std::optional<config::HostPort> upstream_of(int32_t node_id) const override;
  std::vector<config::HostPort> bootstrap() const override;
  void request_refresh(const char* trigger) override;
  bool clients_log_in_upstream() const override;
  // policy::EndpointResolver: epochgate's address for a node a hint names,
  // or nullopt when that node has no listener. A pure lookup: no bind, no log.
  std::optional<policy::AdvertisedEndpoint> advertised(int32_t node_id) const override;

 private:
  bool start(std::string& error);
  /// `workers`, or with 0 the CPUs this process may use (logged with why).
  static unsigned workers_to_run(const config::Config& c);
  /// Sets the buffer budget from `c`: `limits.buffer_budget_bytes`, or with
  /// 0 the default that fits the cgroup's memory limit; logs a derived
  /// value unless the last one applied was derived from the same limit.
  void apply_buffer_budget(const config::Config& c);
  bool write_ready_file(const std::string& line, std::string& error) const;
  ListenerRegistry::Events listener_events();
  /// Runs `fn` on the control loop (thread-safe, FIFO).
  void post_control(std::function<void()> fn);
  void run_control();
  void hand_off(int32_t node_id, int fd);
  static void on_listener_tick(uv_timer_t* t);
  /// Arms listener_timer_ (one-shot) for the registry's next_due_ms(), or
  /// stops it when nothing waits or a drain began. Main loop only.
  void arm_listener_timer();
  void begin_drain(const char* why);
  void finish();
  void apply_config(config::Config next);
  static void on_signal(uv_signal_t* s, int signum);
  static void on_drain_tick(uv_timer_t* t);
  static void on_housekeeping(uv_timer_t* t);
  metrics::Readiness readiness() const;
  /// Why a node that leads a partition in the view has no listener (its id
  /// over broker_ports.max_node_id, the listener limit...), or "": clients
  /// could not reach that partition's leader through epochgate.
  std::string unserved_leader_reason() const;
  /// GET /debug/config: the effective configuration (config::to_json), the
  /// TLS files loaded, `security_warnings`, and `in_force`: the worker count
  /// and the buffer budget in bytes actually used (what `workers: 0` and
  /// `limits.buffer_budget_bytes: 0` came to).
  std::string debug_config_json() const;

  uv_loop_t loop_;
  std::shared_ptr<const config::Config> config_;
  mutable std::mutex config_mu_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<metrics::ProxyMetrics> metrics_;
  std::unique_ptr<metrics::ListenerMetrics> listener_metrics_;
  std::unique_ptr<tls::AppTls> tls_;  // contexts, reload, SNI names
  policy::MetadataView view_;
  std::unique_ptr<PolicyFencing> fencing_;
  std::unique_ptr<ListenerRegistry> listeners_;
  std::unique_ptr<Acceptor> acceptor_;  // control loop; owns every listening descriptor
  std::string advertise_host_;          // restart-only: fixed at start
  uv_async_t control_async_;
  std::mutex control_mu_;
  std::vector<std::function<void()>> control_posted_;
  bool control_started_ = false;
  uv_timer_t listener_timer_{};  // one-shot: bind retries, departed nodes' listeners
  size_t next_worker_ = 0;
  std::atomic<uint32_t> pending_handoffs_{0};  // accepted, not yet a session with its upstream
  uint64_t base_fds_ = 0;  // descriptors open after start-up, listeners excluded
  std::atomic<uint32_t> client_connections_{0};
  BufferBudget budget_;
  uint64_t budget_applied_ = 0;  // the last limit apply_buffer_budget() set, bytes
  bool budget_derived_ = false;  // ... from the cgroup's memory limit (the key was 0)
  uint64_t budget_memory_limit_ = 0;  // the cgroup memory limit it was derived from (0: none)
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Refresher> refresher_;
  /// upstream_sasl as set at start: 0 none, 1 epochgate's own login (clients
  /// log in themselves), 2 lent to clients (sidecar credential mode).
  int upstream_sasl_mode_ = 0;
  std::unique_ptr<metrics::AdminServer> admin_;
  std::unique_ptr<config::ConfigWatcher> watcher_;
  std::string config_path_;
  std::string ready_file_;
  config::CliOverrides overrides_;
  uv_signal_t sigterm_{}, sigint_{}, sighup_{};
  bool sighup_started_ = false;
  uv_timer_t drain_timer_{};
  uv_timer_t housekeeping_{};  // 1 s: log suppression summaries, readiness and listener gauges
  // sigterm_, sigint_, drain_timer_ and housekeeping_ exist (a start that
  // failed before them must not close them).
  bool signals_started_ = false;
  std::atomic<bool> draining_{false};
  bool finishing_ = false;
  bool listeners_bound_ = false;
  uint64_t drain_started_ms_ = 0;
  uint64_t started_ms_ = 0;  // monotonic ms at start(): the view's age before it loads
  int signals_seen_ = 0;
};

}  // namespace epochgate::proxy
