// proxy/app.cc
#include "proxy/app.h"

#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "config/to_json.h"
#include "config/watcher.h"
#include "metrics/admin_server.h"
#include "metrics/logging.h"
#include "metrics/proxy_metrics.h"
#include "proxy/policy_fencing.h"
#include "proxy/refresher.h"
#include "proxy/version.h"

namespace epochgate::proxy {

namespace {
uint64_t now_ms() { return uv_hrtime() / 1000000; }
}  // namespace

App::App(config::Config config)
    : config_(std::make_shared<const config::Config>(std::move(config))),
      registry_(std::make_shared<prometheus::Registry>()),
      metrics_(std::make_unique<metrics::ProxyMetrics>(registry_)) {
  uv_loop_init(&loop_);
  double start = std::chrono::duration<double>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  metrics_->set_build_info(kVersion, start);
  fencing_ = std::make_unique<PolicyFencing>(view_, *this, metrics_.get());
  fencing_->set_config(config_);
}

App::~App() {
  if (uv_loop_alive(&loop_)) uv_run(&loop_, UV_RUN_NOWAIT);
  uv_loop_close(&loop_);
}

void App::set_reload_source(std::string path, config::CliOverrides overrides) {
  config_path_ = std::move(path);
  overrides_ = std::move(overrides);
}

bool App::advertise(int32_t node_id, std::string_view upstream_host, int32_t upstream_port,
                    AdvertisedAddress& out) {
  std::shared_ptr<const config::Config> cfg;
  {
    std::lock_guard<std::mutex> lock(config_mu_);
    cfg = config_;
  }
  if (upstream_host == cfg->effective_advertise_host() && upstream_port > 0 &&
      listeners_->port_of(node_id) == static_cast<uint16_t>(upstream_port)) {
    // Already epochgate's own address (a hint epochgate made): nothing to learn.
    out.host = std::string(upstream_host);
    out.port = upstream_port;
    return true;
  }
  auto snap = view_.snapshot();
  const policy::NodeInfo* known = snap->find_node(node_id);
  if (known == nullptr || known->host != upstream_host || known->port != upstream_port) {
    policy::NodeInfo n;
    n.node_id = node_id;
    n.host = std::string(upstream_host);
    n.port = upstream_port;
    if (known) n.rack = known->rack;
    view_.learn_nodes({n});
  }
  std::string error;
  auto port = listeners_->ensure(node_id, error);
  if (!port) {
    if (!listener_failed_.exchange(true))
      spdlog::error("no listener for broker node {}: {}; clients cannot reach that broker "
                    "through epochgate, readiness is false", node_id, error);
    return false;
  }
  out.host = cfg->effective_advertise_host();
  out.port = *port;
  return true;
}

std::optional<policy::AdvertisedEndpoint> App::advertised(int32_t node_id) const {
  if (!listeners_) return std::nullopt;
  std::string error;
  auto port = listeners_->ensure(node_id, error);
  if (!port) {
    spdlog::warn("no hint naming broker node {}: {}", node_id, error);
    return std::nullopt;
  }
  std::lock_guard<std::mutex> lock(config_mu_);
  return policy::AdvertisedEndpoint{config_->effective_advertise_host(), *port};
}

std::optional<config::HostPort> App::upstream_of(int32_t node_id) const {
  auto snap = view_.snapshot();
  const policy::NodeInfo* n = snap->find_node(node_id);
  if (n == nullptr || n->port <= 0 || n->port > 65535) return std::nullopt;
  return config::HostPort{n->host, static_cast<uint16_t>(n->port)};
}

std::vector<config::HostPort> App::bootstrap() const {
  std::lock_guard<std::mutex> lock(config_mu_);
  return config_->bootstrap_servers;
}

void App::request_refresh(const char* trigger) {
  if (refresher_) refresher_->request_urgent({}, trigger);
}

void App::on_new_listener(int32_t node_id, int fd) {
  for (auto& w : workers_) w->post([w = w.get(), node_id, fd] { w->listen_on(node_id, fd); });
  if (node_id >= 0) {
    spdlog::info("listening for broker node {} on {}:{}", node_id,
                 config_->broker_ports.bind_host.empty() ? config_->listen.host
                                                         : config_->broker_ports.bind_host,
                 listeners_->port_of(node_id).value_or(0));
  }
}

bool App::start(std::string& error) {
  const config::Config& c = *config_;
  if (c.bootstrap_servers.empty()) {
    error = "no upstream bootstrap servers configured (--bootstrap or bootstrap_servers)";
    return false;
  }
  budget_.set_limit(c.limits.buffer_budget_bytes);
  unsigned n = c.workers ? c.workers : std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < n; ++i) {
    WorkerContext ctx;
    ctx.config = config_;
    ctx.metrics = metrics_.get();
    ctx.endpoints = this;
    ctx.upstreams = this;
    ctx.fencing = fencing_.get();
    ctx.budget = &budget_;
    workers_.push_back(std::make_unique<Worker>(static_cast<int>(i), std::move(ctx),
                                                client_connections_));
  }
  std::string bind_host = c.broker_ports.bind_host.empty() ? c.listen.host : c.broker_ports.bind_host;
  listeners_ = std::make_unique<ListenerRegistry>(
      bind_host, c.broker_ports.base, c.broker_ports.map,
      [this](int32_t node, int fd) { on_new_listener(node, fd); });
  if (!listeners_->bind_bootstrap(c.listen, error)) return false;
  // Nodes with explicit ports are bound up front so their addresses exist
  // even before metadata names them (a restarted proxy, clients reconnecting).
  for (const auto& [node, port] : c.broker_ports.map) {
    if (!listeners_->ensure(node, error)) return false;
  }
  for (auto& w : workers_) w->start();
  listeners_bound_ = true;

  refresher_ = std::make_unique<Refresher>(&loop_, config_, view_, metrics_.get());
  fencing_->set_refresher(refresher_.get());
  if (c.refresher.enabled) {
    refresher_->start();
  } else {
    spdlog::warn("metadata refresher is off: epochgate learns leaders only from responses "
                 "passing through (passive mode)");
  }

  std::string admin_addr = "off";
  if (c.admin.enabled) {
    metrics::AdminHandlers h;
    h.metrics = metrics::AdminHandlers::metrics_from(registry_);
    h.healthz = [] { return true; };
    h.readyz = [this] { return readiness(); };
    h.debug_metadata = [this] { return view_.to_json(now_ms()); };
    h.debug_config = [this] { return debug_config_json(); };
    admin_ = std::make_unique<metrics::AdminServer>(&loop_, std::move(h));
    metrics::ListenResult lr = admin_->listen(c.admin.listen.host, c.admin.listen.port);
    if (!lr.ok()) {
      error = "admin " + c.admin.listen.to_string() + ": " + lr.message;
      return false;
    }
    admin_addr = c.admin.listen.host + ":" + std::to_string(lr.port);
  }

  if (!config_path_.empty()) {
    config::WatcherCallbacks cb;
    cb.on_valid = [this](const config::Config& applied, const std::vector<std::string>& restart) {
      for (const auto& r : restart)
        spdlog::warn("config reload: {} changed; it takes effect after a restart", r);
      apply_config(applied);
      spdlog::info("config reloaded from {}", config_path_);
    };
    cb.on_invalid = [this](const std::vector<config::Problem>& problems) {
      for (const auto& p : problems)
        spdlog::error("config reload refused, running config kept: {}", p.to_string());
    };
    watcher_ = std::make_unique<config::ConfigWatcher>(
        &loop_, config_path_, c, [this] { return config::load_effective_config(config_path_, overrides_); },
        std::move(cb), metrics_.get());
    if (int rc = watcher_->start(); rc != 0)
      spdlog::warn("config file {} is not watched ({}); SIGHUP still reloads", config_path_,
                   uv_strerror(rc));
  }

  if (!watcher_) {
    // Without a --config file there is nothing to reload; SIGHUP must not
    // kill the process (its default action) either.
    uv_signal_init(&loop_, &sighup_);
    sighup_.data = this;
    uv_signal_start(&sighup_, [](uv_signal_t*, int) {
      spdlog::warn("SIGHUP: no --config file to reload; flags are fixed until a restart");
    }, SIGHUP);
    sighup_started_ = true;
  }
  uv_signal_init(&loop_, &sigterm_);
  uv_signal_init(&loop_, &sigint_);
  sigterm_.data = sigint_.data = this;
  uv_signal_start(&sigterm_, &App::on_signal, SIGTERM);
  uv_signal_start(&sigint_, &App::on_signal, SIGINT);
  uv_timer_init(&loop_, &drain_timer_);
  drain_timer_.data = this;
  uv_timer_init(&loop_, &housekeeping_);
  housekeeping_.data = this;
  uv_timer_start(&housekeeping_, &App::on_housekeeping, 1000, 1000);

  std::string boot = c.listen.host + ":" + std::to_string(listeners_->port_of(kBootstrapNode).value_or(0));
  spdlog::info("epochgate {} listening on {} for {} ({} workers), advertising {}", kVersion, boot,
               c.bootstrap_servers.front().to_string(), n, c.effective_advertise_host());
  std::printf("epochgate ready bootstrap=%s admin=%s\n", boot.c_str(), admin_addr.c_str());
  std::fflush(stdout);
  return true;
}

int App::run() {
  std::string error;
  if (!start(error)) {
    spdlog::critical("start-up failed: {}", error);
    finish();
    uv_run(&loop_, UV_RUN_DEFAULT);
    return 1;
  }
  uv_run(&loop_, UV_RUN_DEFAULT);
  return 0;
}

metrics::Readiness App::readiness() const {
  metrics::Readiness r;
  if (draining_.load()) {
    r.ready = false;
    r.reason = "draining";
  } else if (!listeners_bound_) {
    r.ready = false;
    r.reason = "listeners not bound";
  } else if (listener_failed_.load()) {
    r.ready = false;
    r.reason = "a broker node's listener could not be bound (see the log)";
  } else if (refresher_ && config_->refresher.enabled && !refresher_->loaded()) {
    r.ready = false;
    r.reason = "metadata view not loaded from any broker yet";
  } else if (refresher_ && config_->refresher.enabled && !refresher_->reachable()) {
    r.ready = false;
    r.reason = "no upstream broker reachable";
  }
  return r;
}

void App::on_housekeeping(uv_timer_t* t) {
  auto* app = static_cast<App*>(t->data);
  metrics::flush_suppressed_log_summaries();
  if (app->metrics_) app->metrics_->set_ready(app->readiness().ready);
}

void App::on_signal(uv_signal_t* s, int signum) {
  auto* app = static_cast<App*>(s->data);
  if (++app->signals_seen_ > 1) {
    spdlog::warn("second signal: exiting now");
    spdlog::default_logger()->flush();
    std::fflush(stdout);
    std::_Exit(0);
  }
  app->begin_drain(signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

void App::begin_drain(const char* why) {
  if (draining_.exchange(true)) return;
  spdlog::info("{}: draining (readiness false, no new connections, up to {} ms for in-flight "
               "requests)", why, config_->drain_timeout_ms);
  for (auto& w : workers_) {
    w->post([w = w.get()] {
      w->stop_accepting();
      w->begin_drain();
    });
  }
  drain_started_ms_ = now_ms();
  uv_timer_start(&drain_timer_, &App::on_drain_tick, 50, 50);
}

void App::on_drain_tick(uv_timer_t* t) {
  auto* app = static_cast<App*>(t->data);
  size_t live = 0;
  for (auto& w : app->workers_) live += w->session_count();
  bool expired = now_ms() - app->drain_started_ms_ >= app->config_->drain_timeout_ms;
  if (live > 0 && !expired) return;
  if (live > 0) spdlog::warn("drain timeout: closing {} connections", live);
  uv_timer_stop(t);
  app->finish();
}

void App::finish() {
  if (finishing_) return;
  finishing_ = true;
  for (auto& w : workers_) w->stop_and_join();
  workers_.clear();
  if (listeners_) listeners_->close_all();
  if (refresher_) refresher_->stop([] {});
  if (admin_) admin_->close();
  if (watcher_) watcher_->close();
  auto close_if = [](uv_handle_t* h) {
    if (h->loop != nullptr && !uv_is_closing(h)) uv_close(h, nullptr);
  };
  if (listeners_bound_) {
    close_if(reinterpret_cast<uv_handle_t*>(&sigterm_));
    close_if(reinterpret_cast<uv_handle_t*>(&sigint_));
    close_if(reinterpret_cast<uv_handle_t*>(&drain_timer_));
    close_if(reinterpret_cast<uv_handle_t*>(&housekeeping_));
    if (sighup_started_) close_if(reinterpret_cast<uv_handle_t*>(&sighup_));
  }
  spdlog::info("stopped");
}

void App::apply_config(config::Config next) {
  auto fresh = std::make_shared<const config::Config>(std::move(next));
  {
    std::lock_guard<std::mutex> lock(config_mu_);
    config_ = fresh;
  }
  for (auto& w : workers_) w->post([w = w.get(), fresh] { w->set_config(fresh); });
  if (refresher_) refresher_->set_config(fresh);
  fencing_->set_config(fresh);
  budget_.set_limit(fresh->limits.buffer_budget_bytes);
  metrics::LogOptions log;
  log.level = fresh->logging.level;
  log.format = fresh->logging.format;
  log.rate_limit_per_sec = fresh->logging.rate_limit_per_sec;
  std::string error;
  if (!metrics::configure_logging(log, &error)) spdlog::error("config reload: logging: {}", error);
}

std::string App::debug_config_json() const {
  std::lock_guard<std::mutex> lock(config_mu_);
  return config::to_json(*config_);
}

}  // namespace epochgate::proxy
