// proxy/app/worker.h: one event-loop thread owning its connections end to end
// (client and upstream on the same loop). Adopts client descriptors the
// Acceptor hands it; never listens itself. Other threads talk to it only
// through post().
#pragma once

#include <uv.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "metrics/close_reason.h"
#include "metrics/proxy_metrics.h"
#include "proxy/core/worker_context.h"
#include "proxy/client/warm_upstreams.h"
#include "proxy/reroute/rerouter.h"
#include "proxy/session/session.h"
#include "proxy/tls/client_handshake.h"

namespace epochgate::proxy {

/// An event loop with its sessions and listener handles.
class Worker {
 public:
  /// `connections` is the process-wide client connection count (limit check).
  Worker(int index, WorkerContext ctx_template, std::atomic<uint32_t>& connections);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// Starts the loop thread.
  void start();
  /// Runs `fn` on the worker thread (thread-safe, FIFO).
  void post(std::function<void()> fn);
  /// Stops the loop once every handle is closed, and joins the thread.
  void stop_and_join();

  // The following run on the worker thread (use post() from elsewhere).
  /// Starts a session on an accepted client descriptor `fd` (ownership
  /// passes) that arrived on `node_id`'s listener; closes it when stopping
  /// or past limits.max_connections. On a TLS listener the connection waits
  /// for its handshake first, counted in limits.max_connections, and is
  /// closed rather than ever served without TLS.
  void adopt(int32_t node_id, int fd);
  /// Drain: sessions stop reading and close once their in-flight requests finish.
  void begin_drain();
  /// Closes every session now.
  void close_all_sessions(CloseReason reason);
  /// The metadata view learned a refresh: reroutes waiting for a leader
  /// look again now.
  void view_changed() {
    if (rerouter_) rerouter_->view_changed();
  }
  /// The cluster's broker node ids from a metadata refresh: the warm
  /// upstream pool keeps connections to these.
  void brokers_seen(const std::vector<int32_t>& node_ids) {
    if (!stopping_) warm_->set_nodes(node_ids);
  }
  /// Replaces the config seen by new and existing sessions (hot reload).
  void set_config(std::shared_ptr<const config::Config> c) { ctx_.config = std::move(c); }

  size_t session_count() const { return sessions_.size(); }
  WorkerContext& context() { return ctx_; }

 private:
  class Slot;
  /// Starts a session on `transport`. `slot`: the place in the connection
  /// count a TLS handshake already holds (null: counted here, and refused
  /// past limits.max_connections).
  void start_session(int32_t node_id, std::unique_ptr<Transport> transport, Slot* slot);
  /// Closes `transport` without a session, counting `reason` in
  /// epochgate_connections_closed_total.
  void refuse(int32_t node_id, std::unique_ptr<Transport> transport, CloseReason reason);
  static void on_async(uv_async_t* a);
  static void on_sweep(uv_timer_t* t);
  static void on_budget_timer(uv_timer_t* t);
  void run_posted();
  /// After a sweep: publishes what this worker holds (sessions, their
  /// in-flight requests and upstream connections, pooled buffers) as the
  /// change since the last call, and has the allocator return free pages
  /// when sessions were freed or `pool_freed_bytes` left the pool.
  void account_held(size_t pool_freed_bytes);

  WorkerContext ctx_;
  std::atomic<uint32_t>& connections_;
  uv_loop_t loop_;
  uv_async_t async_;
  std::unique_ptr<ReadPacer> pacer_;  // closed with the loop's other handles
  std::unique_ptr<Rerouter> rerouter_;  // closed with the loop's other handles
  std::unique_ptr<WarmUpstreams> warm_;  // closed with the loop's other handles
  uv_timer_t sweep_;
  uv_timer_t budget_timer_;  // runs only while sessions wait for the buffer budget
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::function<void()>> posted_;
  SessionList sessions_;
  tls::HandshakeList handshakes_;  // client TLS handshakes not yet a session
  metrics::HeldResources held_published_;  // what account_held() last added to the gauges
  uint64_t sessions_removed_seen_ = 0;     // sessions_.removed() at the last account_held()
  bool stopping_ = false;
};

}  // namespace epochgate::proxy
