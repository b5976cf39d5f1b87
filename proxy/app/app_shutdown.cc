// proxy/app/app_shutdown.cc: how the App stops: the first SIGTERM/SIGINT starts
// a graceful drain (readiness false, listeners closed, workers stop taking
// requests and close idle sessions), bounded by drain_timeout_ms; a second
// signal exits at once; finish() stops accepting before the workers and
// closes every handle of the control loop. Never starts anything.
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "config/watcher.h"
#include "metrics/admin_server.h"
#include "metrics/logging.h"
#include "proxy/app/app.h"
#include "proxy/app/app_tls.h"
#include "proxy/app/refresher.h"
#include "proxy/net/clock.h"

namespace epochgate::proxy {

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
  if (acceptor_) acceptor_->close_all();
  for (auto& w : workers_) w->post([w = w.get()] { w->begin_drain(); });
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
  // Accepting stops before the workers do: no hand-off may reach a stopped worker.
  if (acceptor_) acceptor_->close_all();
  if (control_started_) {
    run_control();  // descriptors still queued for the acceptor are closed by it
    {
      std::lock_guard<std::mutex> lock(control_mu_);
      control_started_ = false;
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&control_async_), nullptr);
  }
  for (auto& w : workers_) w->stop_and_join();
  workers_.clear();
  if (refresher_) refresher_->stop([] {});
  if (admin_) admin_->close();
  if (watcher_) watcher_->close();
  tls_->close(nullptr);
  auto close_if = [](uv_handle_t* h) {
    if (h->loop != nullptr && !uv_is_closing(h)) uv_close(h, nullptr);
  };
  // Only what start() got to: a start that failed at the admin port has
  // its listener timer but no signal handlers yet.
  if (listeners_bound_) close_if(reinterpret_cast<uv_handle_t*>(&listener_timer_));
  if (signals_started_) {
    close_if(reinterpret_cast<uv_handle_t*>(&sigterm_));
    close_if(reinterpret_cast<uv_handle_t*>(&sigint_));
    close_if(reinterpret_cast<uv_handle_t*>(&drain_timer_));
    close_if(reinterpret_cast<uv_handle_t*>(&housekeeping_));
  }
  if (sighup_started_) close_if(reinterpret_cast<uv_handle_t*>(&sighup_));
  metrics::flush_suppressed_log_summaries(/*including_current_second=*/true);
  spdlog::info("stopped");
}

}  // namespace epochgate::proxy
