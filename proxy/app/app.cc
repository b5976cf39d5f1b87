// proxy/app/app.cc
#include "proxy/app/app.h"

#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "config/security_warnings.h"
#include "config/to_json.h"
#include "config/watcher.h"
#include "metrics/admin_server.h"
#include "metrics/listener_metrics.h"
#include "metrics/logging.h"
#include "metrics/proxy_metrics.h"
#include "proxy/app/app_tls.h"
#include "proxy/app/refresher.h"
#include "proxy/app/version.h"
#include "proxy/app/worker_placement.h"
#include "proxy/client/warm_upstreams.h"
#include "proxy/fencing/policy_fencing.h"
#include "proxy/net/clock.h"
#include "proxy/net/fd_limit.h"
#include "proxy/net/log_limited.h"

namespace epochgate::proxy {

namespace {
// Descriptors client accepts leave free for probes, scrapes, the refresher,
// the config watcher, logs and the upstream dial of the last client accepted.
constexpr uint32_t kFdReserve = 32;
}  // namespace

App::App(config::Config config)
    : config_(std::make_shared<const config::Config>(std::move(config))),
      registry_(std::make_shared<prometheus::Registry>()),
      metrics_(std::make_unique<metrics::ProxyMetrics>(registry_)),
      listener_metrics_(std::make_unique<metrics::ListenerMetrics>(registry_)),
      tls_(std::make_unique<tls::AppTls>(registry_)) {
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
  if (!listeners_) return false;
  const int32_t boot_port = listeners_->port_of(kBootstrapNode).value_or(0);
  if (tls_->sni_mode() && upstream_host == tls_->sni_address(node_id, boot_port).host &&
      upstream_port == boot_port) {
    out = tls_->sni_address(node_id, boot_port);  // a hint epochgate made
    return true;
  }
  if (upstream_host == advertise_host_ && upstream_port > 0 &&
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
  // The node is learned (or named again) here: its listener is created now,
  // before this response reaches the client. Refused or failed nodes were
  // logged by the registry; the caller leaves them out of the answer.
  // One-port SNI: every node is its host name on the bootstrap port.
  if (tls_->sni_mode()) return (out = tls_->sni_address(node_id, boot_port)).port > 0;
  auto port = listeners_->ensure(node_id, now_ms());
  if (!port) return false;
  out.host = advertise_host_;
  out.port = *port;
  return true;
}

std::optional<policy::AdvertisedEndpoint> App::advertised(int32_t node_id) const {
  if (!listeners_) return std::nullopt;
  if (tls_->sni_mode()) {
    const AdvertisedAddress a = tls_->sni_address(node_id, listeners_->port_of(kBootstrapNode).value_or(0));
    return policy::AdvertisedEndpoint{a.host, static_cast<uint16_t>(a.port)};
  }
  auto port = listeners_->port_of(node_id);
  if (!port) return std::nullopt;
  return policy::AdvertisedEndpoint{advertise_host_, *port};
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

bool App::clients_log_in_upstream() const {
  if (upstream_sasl_mode_ != 0) return upstream_sasl_mode_ == 1;
  return refresher_ && refresher_->closed_at_metadata_seen();
}

void App::request_refresh(const char* trigger) {
  if (refresher_) refresher_->request_urgent({}, trigger);
}

void App::post_control(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(control_mu_);
  if (!control_started_) return;  // shutting down: the acceptor is gone
  control_posted_.push_back(std::move(fn));
  uv_async_send(&control_async_);
}

void App::run_control() {
  std::vector<std::function<void()>> fns;
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    fns.swap(control_posted_);
  }
  for (auto& f : fns) f();
}

void App::hand_off(int32_t node_id, int fd) {
  if (workers_.empty() || draining_.load()) {
    ::close(fd);
    return;
  }
  // Rerouting keeps one producer's writes in order per worker: its
  // connections (one per broker) must share a worker.
  bool by_peer = false;
  for (const auto& r : config_->policy.rules) by_peer = by_peer || r.reroute;
  Worker* w = workers_[place_connection(fd, workers_.size(), next_worker_++, by_peer)].get();
  ++pending_handoffs_;
  w->post([this, w, node_id, fd] {
    w->adopt(node_id, fd);  // starts the session: its upstream socket exists after this
    --pending_handoffs_;
  });
}

ListenerRegistry::Events App::listener_events() {
  // Each handler runs with the registry's lock held, on whichever thread
  // learned the node: it only queues work for the control loop, and reads
  // nothing but the registry's own copy of the limits (never config_).
  ListenerRegistry::Events ev;
  ev.opened = [this](int32_t node, int fd, uint16_t port) {
    post_control([this, node, fd, port] {
      acceptor_->add(node, fd);
      if (node >= 0)
        EPOCHGATE_PROXY_LOG(info, "listener_opened", "listening for broker node {} on {}:{}", node,
                            listeners_->limits().bind_host, port);
    });
  };
  ev.closed = [this](int32_t node) {
    post_control([this, node] {
      acceptor_->remove(node);
      if (node >= 0) listener_metrics_->listener_closed();
    });
  };
  ev.refused = [this](int32_t node, Refusal why) {
    listener_metrics_->listener_refused(refusal_name(why));
    const auto& lim = listeners_->limits();
    if (why == Refusal::kMaxNodeId) {
      EPOCHGATE_PROXY_LOG(warn, "listener_refused",
                          "broker node {} is not advertised: its id is over "
                          "broker_ports.max_node_id {} (give it a broker_ports.map entry)",
                          node, lim.max_node_id);
    } else if (why == Refusal::kMaxListeners) {
      EPOCHGATE_PROXY_LOG(warn, "listener_refused",
                          "broker node {} is not advertised: {} node listeners is "
                          "broker_ports.max_listeners",
                          node, lim.max_listeners);
    } else {
      EPOCHGATE_PROXY_LOG(warn, "listener_refused",
                          "broker node {} is not advertised: broker_ports.base {} + node id "
                          "does not fit in a port (give it a broker_ports.map entry)",
                          node, lim.port_base);
    }
  };
  ev.bind_failed = [this](int32_t) {
    listener_metrics_->bind_failure();
    // Its retry is a new due moment; a worker's ensure() may have failed it.
    post_control([this] { arm_listener_timer(); });
  };
  return ev;
}

bool App::start(std::string& error) {
  const config::Config& c = *config_;
  if (c.bootstrap_servers.empty()) {
    error = "no upstream bootstrap servers configured (--bootstrap or bootstrap_servers)";
    return false;
  }
  started_ms_ = now_ms();
  apply_buffer_budget(c);
  const unsigned n = workers_to_run(c);
  listener_metrics_->set_workers(n);
  // The pool's size is read at start; a reload that raises
  // limits.warm_upstreams_per_broker is not re-checked against the limit.
  check_fd_budget(c, n, n * WarmUpstreams::max_descriptors(c.limits.warm_upstreams_per_broker),
                  *listener_metrics_);
  advertise_host_ = c.effective_advertise_host();
  // SNI names route only to nodes the cluster has (the view is thread-safe).
  tls_->set_node_exists([this](int32_t id) { return view_.snapshot()->find_node(id) != nullptr; });
  if (!tls_->start(&loop_, c, error)) return false;
  for (const std::string& w : config::security_warnings(c)) spdlog::warn("security: {}", w);
  uv_async_init(&loop_, &control_async_, [](uv_async_t* a) { static_cast<App*>(a->data)->run_control(); });
  control_async_.data = this;
  control_started_ = true;
  Acceptor::Options ao;
  ao.fd_reserve = kFdReserve;
  // Two per client (its upstream too, dialled or about to be), one per
  // listener and admin connection, and what start-up itself opened.
  ao.descriptors_committed = [this] {
    return base_fds_ + acceptor_->size() + (admin_ ? admin_->connection_count() : 0) +
           2 * (uint64_t{client_connections_.load()} + pending_handoffs_.load());
  };
  acceptor_ = std::make_unique<Acceptor>(
      &loop_, [this](int32_t node, int fd) { hand_off(node, fd); },
      [this](std::string_view reason) {
        listener_metrics_->accept_error(reason);
        EPOCHGATE_PROXY_LOG(warn, "accept_failed",
                            "accepting client connections paused ({}: {} of the descriptor "
                            "limit); accepting retries with backoff, clients wait in the listen "
                            "backlog",
                            reason,
                            reason == "fd_reserve" ? "within the last " + std::to_string(kFdReserve)
                                                   : std::string("none left"));
      },
      ao);
  for (unsigned i = 0; i < n; ++i) {
    WorkerContext ctx;
    ctx.config = config_;
    ctx.metrics = metrics_.get();
    ctx.endpoints = this;
    ctx.upstreams = this;
    ctx.fencing = fencing_.get();
    ctx.budget = &budget_;
    tls_->fill(ctx);
    workers_.push_back(std::make_unique<Worker>(static_cast<int>(i), std::move(ctx),
                                                client_connections_));
  }
  ListenerLimits lim;
  lim.bind_host = c.broker_ports.bind_host.empty() ? c.listen.host : c.broker_ports.bind_host;
  lim.port_base = c.broker_ports.base;
  lim.explicit_ports = c.broker_ports.map;
  lim.max_node_id = c.broker_ports.max_node_id;
  lim.max_listeners = c.broker_ports.max_listeners;
  lim.absent_grace_ms = c.broker_ports.absent_grace_ms;
  lim.bind_retry_max_ms = c.broker_ports.bind_retry_max_ms;
  listeners_ = std::make_unique<ListenerRegistry>(std::move(lim), listener_events());
  if (!listeners_->bind_bootstrap(c.listen, error)) return false;
  // Nodes with explicit ports are bound up front so their addresses exist
  // even before metadata names them (a restarted proxy, clients reconnecting).
  if (!tls_->sni_mode() && !listeners_->bind_pinned(error)) return false;
  // upstream_sasl applies at restart only, so workers read this copy unlocked;
  // sessions exist only once the control loop runs hand_off(), after start(),
  // so refresher_ below is set before any session asks.
  upstream_sasl_mode_ = !config_->upstream_sasl.enabled()                 ? 0
                        : config_->upstream_sasl.on_behalf_of_clients ? 2
                                                                      : 1;
  for (auto& w : workers_) w->start();
  uv_timer_init(&loop_, &listener_timer_);
  listener_timer_.data = this;
  listeners_bound_ = true;  // the timer exists: arm_listener_timer() may run
  arm_listener_timer();

  refresher_ = std::make_unique<Refresher>(&loop_, config_, view_, metrics_.get());
  // The refresher's brokers are the cluster's node set: listeners follow it.
  refresher_->set_on_metadata([this](const codec::MetadataResponse& m) {
    std::vector<int32_t> ids;
    ids.reserve(m.brokers.size());
    for (const auto& b : m.brokers) ids.push_back(b.node_id);
    if (!tls_->sni_mode()) {
      listeners_->observe_brokers(ids, now_ms());
      arm_listener_timer();  // a node that left starts its grace period
    }
    // Writes a broker answered NOT_LEADER_OR_FOLLOWER wait for the view to
    // name their leader: tell the workers now rather than at their poll.
    for (auto& w : workers_)
      w->post([w = w.get(), ids] {
        w->view_changed();
        w->brokers_seen(ids);
      });
  });
  refresher_->set_tls([this] { WorkerContext w; tls_->fill(w); return w.tls; }());
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
    h.metrics = metrics::AdminHandlers::metrics_from(registry_, metrics_.get());
    h.healthz = [] { return true; };
    h.readyz = [this] { return readiness(); };
    h.debug_metadata = [this] { return view_.to_json(now_ms()); };
    h.debug_config = [this] { return debug_config_json(); };
    h.on_evicted = [this](const char* why) {
      listener_metrics_->admin_evicted(why);
      EPOCHGATE_PROXY_LOG(info, "admin_evicted",
                          "admin connection closed to make room for a new one ({}; "
                          "admin.max_connections {})",
                          why, config_->admin.max_connections);
    };
    metrics::AdminOptions ao;
    ao.max_connections = c.admin.max_connections;
    ao.idle_timeout_ms = c.admin.idle_timeout_ms;
    ao.debug_loopback_only = !c.admin.expose_debug;
    if (!c.admin.listen.host.empty() && c.admin.listen.host != "0.0.0.0" &&
        c.admin.listen.host != "::")
      ao.debug_hosts.push_back(c.admin.listen.host);
    admin_ = std::make_unique<metrics::AdminServer>(&loop_, std::move(h), ao);
    metrics::ListenResult lr = admin_->listen(c.admin.listen.host, c.admin.listen.port);
    if (!lr.ok()) {
      error = lr.message.empty() ? "admin " + c.admin.listen.to_string() + ": cannot listen"
                                 : lr.message;
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
  signals_started_ = true;
  // Descriptors open before any client: the lowest free number now (no
  // holes yet), less the listeners and admin counted separately.
  if (int probe = ::fcntl(0, F_DUPFD_CLOEXEC, 0); probe >= 0) {
    ::close(probe);
    base_fds_ = static_cast<uint64_t>(probe);
    base_fds_ -= std::min<uint64_t>(base_fds_, acceptor_->size());
  }

  std::string boot = c.listen.host + ":" + std::to_string(listeners_->port_of(kBootstrapNode).value_or(0));
  spdlog::info("epochgate {} listening on {} for {} ({} workers), advertising {}", kVersion, boot,
               c.bootstrap_servers.front().to_string(), n, c.effective_advertise_host());
  return write_ready_file("epochgate ready bootstrap=" + boot + " admin=" + admin_addr + "\n",
                          error);
}

bool App::write_ready_file(const std::string& line, std::string& error) const {
  if (ready_file_.empty()) return true;
  if (ready_file_ == "-") {
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    return true;
  }
  // A reader polling for the file must never see half a line.
  const std::string tmp = ready_file_ + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  bool ok = f != nullptr && std::fputs(line.c_str(), f) >= 0;
  if (f != nullptr && std::fclose(f) != 0) ok = false;
  if (!ok || ::rename(tmp.c_str(), ready_file_.c_str()) != 0) {
    error = "--ready-file " + ready_file_ + ": " + std::strerror(errno);
    return false;
  }
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

void App::on_housekeeping(uv_timer_t* t) {
  auto* app = static_cast<App*>(t->data);
  metrics::flush_suppressed_log_summaries();
  if (app->metrics_) {
    app->metrics_->set_ready(app->readiness().ready);
    // Before the first answer the view is as old as the process.
    const uint64_t learned = app->refresher_ ? app->refresher_->last_completed_ms() : 0;
    const uint64_t since = learned ? learned : app->started_ms_;
    const uint64_t now = now_ms();
    app->metrics_->set_view_age(now > since ? static_cast<double>(now - since) / 1e3 : 0.0);
  }
  if (app->refresher_) app->refresher_->report_session(now_ms());
  if (app->listeners_) {
    auto n = app->listeners_->counts();
    app->listener_metrics_->set_listeners(n.listening, n.bind_failed, n.refused);
  }
}

void App::on_listener_tick(uv_timer_t* t) {
  auto* app = static_cast<App*>(t->data);
  if (app->listeners_ && !app->draining_.load()) app->listeners_->tick(now_ms());
  app->arm_listener_timer();
}

void App::arm_listener_timer() {
  if (!listeners_bound_ || !listeners_) return;
  const std::optional<uint64_t> next = listeners_->next_due_ms();
  if (!next || draining_.load()) {
    uv_timer_stop(&listener_timer_);
    return;
  }
  uv_update_time(&loop_);  // the cached loop time may be behind now_ms()
  const uint64_t now = now_ms();
  uv_timer_start(&listener_timer_, &App::on_listener_tick, *next > now ? *next - now : 0, 0);
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
  apply_buffer_budget(*fresh);
  metrics::LogOptions log;
  log.level = fresh->logging.level;
  log.format = fresh->logging.format;
  log.rate_limit_per_sec = fresh->logging.rate_limit_per_sec;
  std::string error;
  if (!metrics::configure_logging(log, &error)) spdlog::error("config reload: logging: {}", error);
}

std::string App::debug_config_json() const {
  std::lock_guard<std::mutex> lock(config_mu_);
  std::string json = tls_->add_debug(config::to_json(*config_));
  // Settings that weaken security, as the start-up log said them.
  if (!json.empty() && json.back() == '}') {
    json.pop_back();
    json += ",\"security_warnings\":" +
            config::security_warnings_json(config::security_warnings(*config_));
    // The defaults derived from the process's CPU and memory limits (0 in
    // the keys above), as in force.
    json += fmt::format(",\"in_force\":{{\"workers\":{},\"buffer_budget_bytes\":{}}}}}",
                        workers_.size(), budget_.limit());
  }
  return json;
}

}  // namespace epochgate::proxy
