// proxy/app/process_limits.h: what the kernel lets this process use, for the
// defaults that must fit inside it: the CPUs (`workers: 0`) and the memory
// (`limits.buffer_budget_bytes: 0`).
//
// A pod's limits are cgroup settings, not fewer cores or less RAM in sight:
// one event loop per core of a 32-core node under a one-CPU limit is 32
// loops sharing a tenth of a second every 100 ms, each throttled in turn
// (stalls of tens of ms), each with its own pools and warm upstream
// connections; a 1 GiB buffer budget under a 512 MiB memory limit lets a
// burst end in the OOM killer instead of backpressure. So the defaults read
// what the scheduler and the memory controller will give: the CPU affinity
// mask (taskset, cpusets, Kubernetes' static CPU manager), the CPU quota
// (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`) and
// the memory limit (v2 `memory.max`, v1 `memory.limit_in_bytes`), each the
// lowest along the cgroup's ancestors, as the JVM and Go's runtime do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace epochgate::proxy {

/// A cgroup limit and the file it was read from (as the process sees it).
struct CgroupLimit {
  /// CPUs' worth of time per period (quota / period: 0.5 is 50 ms every
  /// 100 ms) for a CPU limit; bytes for a memory limit.
  double value = 0;
  std::string file;
};

/// The CPUs in this process's affinity mask (sched_getaffinity(2)); the
/// online CPUs when the mask cannot be read. At least 1.
unsigned affinity_cpus();

/// The lowest CPU limit on this process's cgroups, read under `root` ("" for
/// the real /proc and /sys; tests pass a directory laid out the same way):
/// `<root>/proc/self/cgroup` names the cgroup, `<root>/proc/self/mountinfo`
/// where its hierarchy is mounted (a container's mount root is mapped as the
/// kernel reports it). Every level from the cgroup up to the mount's root is
/// read; a level without a limit ("max", -1) or without the file is skipped.
/// nullopt when no level has a limit or nothing can be read (never an error:
/// the default then follows the affinity mask alone).
std::optional<CgroupLimit> cgroup_cpu_limit(const std::string& root = "");

/// Whether `<root>/proc/self/cgroup` and `mountinfo` can be read at all (so
/// that "no limit" is not claimed where none could be looked for).
bool cgroups_readable(const std::string& root = "");

/// The lowest memory limit on this process's cgroups in bytes, read as
/// cgroup_cpu_limit() reads; v1's "no limit" (a page-rounded INT64_MAX) and
/// v2's "max" are none.
std::optional<CgroupLimit> cgroup_memory_limit(const std::string& root = "");

/// min(`affinity`, `cpu_limit` rounded up), at least 1: the default worker count.
unsigned cpus_to_use(unsigned affinity, const std::optional<CgroupLimit>& cpu_limit);

/// The buffer budget used when none is set (bytes): kDefaultBufferBudgetBytes,
/// or half of `memory_limit` when that is less (the rest is left to the
/// connections themselves, TLS state, the metadata view and the allocator),
/// never below `high_watermark_bytes` (one connection must fit its queue).
uint64_t buffer_budget_for(const std::optional<CgroupLimit>& memory_limit,
                           uint64_t high_watermark_bytes);
inline constexpr uint64_t kDefaultBufferBudgetBytes = 1ull << 30;

}  // namespace epochgate::proxy
