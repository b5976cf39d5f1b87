// proxy/app/app_limits.cc: the defaults that must fit what the kernel lets
// the process use (proxy/app/process_limits.h): the worker count and the
// buffer budget, each logged with where it came from when derived.
#include <spdlog/spdlog.h>

#include "proxy/app/app.h"
#include "proxy/app/process_limits.h"

namespace epochgate::proxy {

unsigned App::workers_to_run(const config::Config& c) {
  if (c.workers != 0) return c.workers;
  const unsigned affinity = affinity_cpus();
  const auto limit = cgroup_cpu_limit();
  const unsigned n = cpus_to_use(affinity, limit);
  if (limit)
    spdlog::info("workers: {} (the CPUs this process may use: {} in its affinity mask, a cgroup CPU "
                 "limit of {:.2f} in {})",
                 n, affinity, limit->value, limit->file);
  else
    spdlog::info("workers: {} (the CPUs in this process's affinity mask; no cgroup CPU limit)", n);
  return n;
}

void App::apply_buffer_budget(const config::Config& c) {
  uint64_t bytes = c.limits.buffer_budget_bytes;
  if (bytes == 0) {
    // Read again at each reload: a pod's limits can be resized in place.
    const auto limit = cgroup_memory_limit();
    bytes = buffer_budget_for(limit, c.limits.high_watermark_bytes);
    if (bytes != budget_applied_) {
      if (limit)
        spdlog::info("limits.buffer_budget_bytes: {} bytes ({:.0f} MiB: the lesser of {} MiB and half "
                     "the cgroup memory limit of {:.0f} MiB in {})",
                     bytes, bytes / 1048576.0, kDefaultBufferBudgetBytes >> 20,
                     limit->value / 1048576.0, limit->file);
      else
        spdlog::info("limits.buffer_budget_bytes: {} bytes ({} MiB; no cgroup memory limit)", bytes,
                     bytes >> 20);
    }
  }
  budget_.set_limit(bytes);
  budget_applied_ = bytes;
}

}  // namespace epochgate::proxy
