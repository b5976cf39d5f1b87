// proxy/app/worker.cc
#include "proxy/app/worker.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "metrics/proxy_metrics.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"
#include "proxy/net/tcp_transport.h"
#include "proxy/tls/tls_wrap.h"

namespace epochgate::proxy {

Worker::Worker(int index, WorkerContext ctx_template, std::atomic<uint32_t>& connections)
    : ctx_(std::move(ctx_template)), connections_(connections) {
  uv_loop_init(&loop_);
  ctx_.loop = &loop_;
  ctx_.worker_index = index;
  pacer_ = std::make_unique<ReadPacer>(&loop_);
  ctx_.pacer = pacer_.get();
  if (ctx_.fencing != nullptr) {
    rerouter_ = std::make_unique<Rerouter>(ctx_);
    ctx_.rerouter = rerouter_.get();
  }
  warm_ = std::make_unique<WarmUpstreams>(ctx_);
  ctx_.warm = warm_.get();
  uv_async_init(&loop_, &async_, &Worker::on_async);
  async_.data = this;
  uv_timer_init(&loop_, &sweep_);
  sweep_.data = this;
  uv_timer_start(&sweep_, &Worker::on_sweep, 1000, 1000);
  uv_timer_init(&loop_, &budget_timer_);
  budget_timer_.data = this;
  ctx_.budget_recheck = [this] {
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&budget_timer_)))
      uv_timer_start(&budget_timer_, &Worker::on_budget_timer, 25, 25);
  };
}

void Worker::on_budget_timer(uv_timer_t* t) {
  auto* w = static_cast<Worker*>(t->data);
  bool waiting = false;
  w->sessions_.for_each([&](Session& s) {
    if (s.close_if_client_gone()) return;
    s.recheck_budget();
    waiting = waiting || s.budget_paused();
  });
  if (!waiting) uv_timer_stop(t);
  if (w->ctx_.metrics && w->ctx_.budget)
    w->ctx_.metrics->set_buffered_bytes(w->ctx_.budget->used());
}

Worker::~Worker() = default;

void Worker::start() {
  thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
}

void Worker::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    posted_.push_back(std::move(fn));
  }
  uv_async_send(&async_);
}

void Worker::on_async(uv_async_t* a) { static_cast<Worker*>(a->data)->run_posted(); }

void Worker::run_posted() {
  std::vector<std::function<void()>> fns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fns.swap(posted_);
  }
  for (auto& f : fns) f();
}

namespace {

// Closes a client connection that gets no session (refused before one
// exists): owns the transport until its handle is closed, then frees itself.
class Refused final : private TransportUser {
 public:
  static void close(std::unique_ptr<Transport> t) {
    auto* r = new Refused(std::move(t));
    r->transport_->close();
  }

 private:
  explicit Refused(std::unique_ptr<Transport> t) : transport_(std::move(t)) {
    transport_->set_user(*this);
  }
  void on_transport_alloc(uv_buf_t* buf) override {
    buf->base = nullptr;
    buf->len = 0;
  }
  void on_transport_read(ssize_t) override {}
  void on_transport_written(int) override {}
  void on_transport_ready(int) override {}
  void on_transport_closed() override { delete this; }
  std::unique_ptr<Transport> transport_;
};

}  // namespace

/// One place in the process-wide connection count (limits.max_connections),
/// held by a client TLS handshake and handed to its session; given back when
/// dropped still held (a failed or abandoned handshake).
class Worker::Slot {
 public:
  explicit Slot(std::atomic<uint32_t>& count) : count_(&count) {}
  ~Slot() {
    if (count_ != nullptr) count_->fetch_sub(1);
  }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  /// The session counts against the same number from now on.
  void hand_over() { count_ = nullptr; }

 private:
  std::atomic<uint32_t>* count_;
};

void Worker::refuse(int32_t node_id, std::unique_ptr<Transport> transport,
                    CloseReason reason) {
  if (ctx_.metrics) {
    ctx_.metrics->connection_closed_reason(reason);
    if (metrics::is_frame_error(reason)) ctx_.metrics->frame_error(reason);
  }
  if (reason == CloseReason::kMaxConnections)
    EPOCHGATE_PROXY_LOG(warn, "max_connections",
                        "client connection on node {} listener refused: {} connections (TLS "
                        "handshakes included) is the configured maximum (limits.max_connections)",
                        node_id, ctx_.config->limits.max_connections);
  Refused::close(std::move(transport));
}

void Worker::adopt(int32_t node_id, int fd) {
  if (stopping_) {
    ::close(fd);
    return;
  }
  auto tcp = std::make_unique<TcpTransport>(ctx_.loop);
  const int rc = tcp->open(fd);
  std::unique_ptr<Transport> transport = std::move(tcp);
  if (rc != 0) {
    ::close(fd);
    EPOCHGATE_PROXY_LOG(warn, "adopt_failed", "worker {}: cannot take a client connection on node {} listener: {}",
                        ctx_.worker_index, node_id, uv_strerror(rc));
    refuse(node_id, std::move(transport), CloseReason::kAcceptFailed);
    return;
  }
  if (!ctx_.tls.client_tls) {
    start_session(node_id, std::move(transport), nullptr);
    return;
  }
  // A TLS listener: the connection becomes TLS or is closed, never a plain
  // session. The handshake takes its place in limits.max_connections now
  // (descriptors and memory are spent from accept on) and hands it to the
  // session; no session or upstream dial exists before the handshake ends.
  auto slot = std::make_shared<Slot>(connections_);
  if (++connections_ > ctx_.config->limits.max_connections) {
    refuse(node_id, std::move(transport), CloseReason::kMaxConnections);
    return;  // `slot` gives the place back
  }
  const std::string peer = transport->peer();
  std::unique_ptr<tls::TlsTransport> t = tls::wrap_client(ctx_.loop, ctx_.tls, transport, peer);
  if (!t) {
    EPOCHGATE_PROXY_LOG(err, "tls_unavailable",
                        "client connection on node {} listener closed: client TLS is configured "
                        "but no server context is loaded",
                        node_id);
    refuse(node_id, std::move(transport), CloseReason::kTlsUnavailable);
    return;
  }
  tls::ClientHandshake::start(handshakes_, std::move(t), node_id,
                              [this, slot](int32_t node, std::unique_ptr<Transport> ready) {
                                start_session(node, std::move(ready), slot.get());
                              });
}

void Worker::start_session(int32_t node_id, std::unique_ptr<Transport> transport, Slot* slot) {
  if (stopping_) {
    refuse(node_id, std::move(transport), CloseReason::kShutdown);
    return;
  }
  uint32_t n = connections_.load();
  if (slot != nullptr) {
    slot->hand_over();  // counted since the handshake began
  } else {
    n = ++connections_;
  }
  auto* s = new Session(ctx_, sessions_, node_id, std::move(transport));
  s->count_against(&connections_);
  if (slot == nullptr && n > ctx_.config->limits.max_connections) {
    EPOCHGATE_PROXY_LOG(warn, "max_connections",
                        "client connection refused: {} connections is the configured maximum "
                        "(limits.max_connections)",
                        ctx_.config->limits.max_connections);
    if (ctx_.metrics) ctx_.metrics->frame_error(CloseReason::kMaxConnections);
    s->close(CloseReason::kMaxConnections);
    return;
  }
  s->start();
}

void Worker::on_sweep(uv_timer_t* t) {
  auto* w = static_cast<Worker*>(t->data);
  const auto& lim = w->ctx_.config->limits;
  if (w->ctx_.metrics && w->ctx_.budget)
    w->ctx_.metrics->set_buffered_bytes(w->ctx_.budget->used());
  const size_t pool_freed = w->ctx_.pool.trim();
  uint64_t now = now_ns();
  uint64_t idle_ns = uint64_t{lim.idle_timeout_ms} * 1000000;
  uint64_t partial_ns = uint64_t{lim.partial_frame_timeout_ms} * 1000000;
  w->sessions_.for_each([&](Session& s) {
    if (s.close_if_client_gone()) return;
    s.check_overdue(now);
    if (idle_ns && s.idle_for(now, idle_ns)) {
      EPOCHGATE_PROXY_LOG(info, "idle_timeout",
                          "closing client connection on node {} listener: idle for {} ms "
                          "(limits.idle_timeout_ms)",
                          s.node_id(), lim.idle_timeout_ms);
      s.close(CloseReason::kIdleTimeout);
    } else if (partial_ns && s.partial_frame_stalled(now, partial_ns)) {
      EPOCHGATE_PROXY_LOG(warn, "partial_frame_timeout",
                          "closing client connection on node {} listener: partial frame "
                          "incomplete for over {} ms of the client's own time "
                          "(limits.partial_frame_timeout_ms)",
                          s.node_id(), lim.partial_frame_timeout_ms);
      if (w->ctx_.metrics) w->ctx_.metrics->frame_error(CloseReason::kPartialFrameTimeout);
      s.close(CloseReason::kPartialFrameTimeout);
    }
  });
  w->warm_->tick();
  w->account_held(pool_freed);
}

void Worker::begin_drain() {
  sessions_.for_each([](Session& s) { s.begin_drain(); });
}

void Worker::close_all_sessions(CloseReason reason) {
  sessions_.for_each([reason](Session& s) { s.close(reason); });
}

void Worker::stop_and_join() {
  post([this] {
    stopping_ = true;
    handshakes_.close_all();
    close_all_sessions(CloseReason::kShutdown);
    warm_->close();
    if (rerouter_) rerouter_->close([] {});
    uv_close(reinterpret_cast<uv_handle_t*>(&sweep_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&budget_timer_), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr);
    pacer_->close();
  });
  const bool ran = thread_.joinable();
  if (ran) thread_.join();
  // A worker whose thread never started (start-up failed before it) runs
  // the closing above here, to the end, so its loop closes cleanly.
  uv_run(&loop_, ran ? UV_RUN_NOWAIT : UV_RUN_DEFAULT);
  int rc = uv_loop_close(&loop_);
  if (rc != 0) spdlog::warn("worker {}: loop closed with handles still open", ctx_.worker_index);
}

}  // namespace epochgate::proxy
