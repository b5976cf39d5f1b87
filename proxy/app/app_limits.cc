// proxy/app/app_limits.cc: the defaults that must fit what the kernel lets
// the process use (proxy/app/process_limits.h): the worker count and the
// buffer budget, each logged with where it came from when derived.
#include <spdlog/spdlog.h>

#include <string>

#include "metrics/listener_metrics.h"
#include "proxy/app/app.h"
#include "proxy/app/process_limits.h"

namespace epochgate::proxy {
namespace {

// Why no cgroup limit was used: none set, or none could be looked for.
std::string no_limit_reason(const std::string& kind) {
  if (cgroups_readable()) return "no cgroup " + kind + " limit";
  return "/proc/self/cgroup or /proc/self/mountinfo unreadable: no cgroup " + kind +
         " limit known";
}

}  // namespace

unsigned App::workers_to_run(const config::Config& c) {
  if (c.workers != 0) return c.workers;
  const unsigned affinity = affinity_cpus();
  const auto limit = cgroup_cpu_limit();
  const unsigned n = cpus_to_use(affinity, limit);
  if (limit)
    spdlog::info("workers: {} (the CPUs this process may use: {} in its affinity mask, a cgroup CPU "
                 "limit of {:g} in {})",
                 n, affinity, limit->value, limit->file);
  else
    spdlog::info("workers: {} (the CPUs in this process's affinity mask; {})", n,
                 no_limit_reason("CPU"));
  return n;
}

void App::apply_buffer_budget(const config::Config& c) {
  const uint64_t set = c.limits.buffer_budget_bytes;
  if (set != 0) {
    budget_.set_limit(set);
    listener_metrics_->set_buffer_budget(set);
    budget_applied_ = set;
    budget_derived_ = false;
    return;
  }
  // Read again at each reload: a pod's limits can be resized in place.
  const auto limit = cgroup_memory_limit();
  const uint64_t bytes = buffer_budget_for(limit, c.limits.high_watermark_bytes);
  const uint64_t limit_bytes = limit ? static_cast<uint64_t>(limit->value) : 0;
  if (budget_derived_ && bytes == budget_applied_ && limit_bytes == budget_memory_limit_) return;
  budget_.set_limit(bytes);
  listener_metrics_->set_buffer_budget(bytes);
  budget_applied_ = bytes;
  budget_derived_ = true;
  budget_memory_limit_ = limit_bytes;
  const uint64_t mib = 1 << 20;
  if (!limit) {
    spdlog::info("limits.buffer_budget_bytes: {} bytes ({} MiB; {})", bytes, bytes / mib,
                 no_limit_reason("memory"));
    return;
  }
  const uint64_t half = limit_bytes / 2;
  if (bytes == half) {
    spdlog::info("limits.buffer_budget_bytes: {} bytes ({:g} MiB: half the cgroup memory limit "
                 "of {:g} MiB in {})",
                 bytes, bytes / double(mib), limit_bytes / double(mib), limit->file);
  } else if (bytes == kDefaultBufferBudgetBytes && half > bytes) {
    spdlog::info("limits.buffer_budget_bytes: {} bytes ({} MiB, the most by default; half the "
                 "cgroup memory limit of {:g} MiB in {} is more)",
                 bytes, bytes / mib, limit_bytes / double(mib), limit->file);
  } else {
    // Clamped up to what one connection's queue needs.
    spdlog::info("limits.buffer_budget_bytes: {} bytes (limits.high_watermark_bytes: half the "
                 "cgroup memory limit of {:g} MiB in {} is less)",
                 bytes, limit_bytes / double(mib), limit->file);
    if (bytes >= limit_bytes)
      spdlog::warn("limits.buffer_budget_bytes {} is not below the cgroup memory limit of {} bytes "
                   "({}): the kernel may end the process before backpressure starts; raise the "
                   "memory limit or lower limits.high_watermark_bytes",
                   bytes, limit_bytes, limit->file);
  }
}

}  // namespace epochgate::proxy
