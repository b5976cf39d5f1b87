// proxy/app/worker_held.cc: what a worker holds for its clients, published as
// gauges (so growth that LeakSanitizer cannot see, memory still reachable,
// shows), and the heap trim that follows a worker letting go of memory.
#include <uv.h>

#include "metrics/proxy_metrics.h"
#include "proxy/app/worker.h"
#include "proxy/net/clock.h"
#include "proxy/net/heap_trim.h"

namespace epochgate::proxy {

void Worker::account_held(size_t pool_freed_bytes) {
  metrics::HeldResources now;
  now.sessions = static_cast<int64_t>(sessions_.size());
  sessions_.for_each([&](Session& s) {
    now.in_flight += static_cast<int64_t>(s.in_flight_count());
    now.upstream_connections += s.upstream_connections();
  });
  now.pooled_buffers = static_cast<int64_t>(ctx_.pool.pooled() + ctx_.pool.pooled_large());
  now.pooled_bytes = static_cast<int64_t>(ctx_.pool.pooled_bytes());
  if (ctx_.metrics) {
    metrics::HeldResources d;
    d.sessions = now.sessions - held_published_.sessions;
    d.in_flight = now.in_flight - held_published_.in_flight;
    d.upstream_connections = now.upstream_connections - held_published_.upstream_connections;
    d.pooled_buffers = now.pooled_buffers - held_published_.pooled_buffers;
    d.pooled_bytes = now.pooled_bytes - held_published_.pooled_bytes;
    ctx_.metrics->add_held_resources(d);
    held_published_ = now;
  }
  const uint64_t removed = sessions_.removed();
  const bool released = pool_freed_bytes > 0 || removed != sessions_removed_seen_;
  sessions_removed_seen_ = removed;
  trim_heap_if_due(released, now_ns());
}

}  // namespace epochgate::proxy
