// proxy/worker_held.cc: what a worker does after letting go of memory: the
// heap trim that hands the allocator's free pages back.
#include <uv.h>

#include "proxy/heap_trim.h"
#include "proxy/worker.h"

namespace epochgate::proxy {

void Worker::account_held(size_t pool_freed_bytes) {
  const uint64_t removed = sessions_.removed();
  const bool released = pool_freed_bytes > 0 || removed != sessions_removed_seen_;
  sessions_removed_seen_ = removed;
  trim_heap_if_due(released, uv_hrtime());
}

}  // namespace epochgate::proxy
