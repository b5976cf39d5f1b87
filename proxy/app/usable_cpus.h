// proxy/app/usable_cpus.h: how many CPUs this process may use, for the
// default number of workers (`workers: 0`). A pod's CPU limit is a cgroup
// quota, not fewer cores: one event loop per core of a 32-core node under a
// one-CPU limit is 32 loops sharing a tenth of a second of CPU every 100 ms,
// each throttled in turn (stalls of tens of ms), and each with its own
// pools and warm upstream connections. So the default counts what the
// scheduler will give: the CPU affinity mask (taskset, cpusets, Kubernetes'
// static CPU manager) and the cgroup's CPU quota, rounded up (cgroup v2
// `cpu.max`, v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`, the lowest along
// the cgroup's ancestors), as the JVM and Go's runtime do.
#pragma once

#include <optional>
#include <string>

namespace epochgate::proxy {

/// A cgroup CPU limit: CPUs' worth of time per period (quota / period, e.g.
/// 0.5 for 50 ms every 100 ms) and the file it was read from.
struct CgroupCpuLimit {
  double cpus = 0;
  std::string file;
};

/// What the default worker count is made of.
struct UsableCpus {
  unsigned affinity = 1;                ///< CPUs in this process's affinity mask
  std::optional<CgroupCpuLimit> limit;  ///< the cgroup's CPU limit, if any
  unsigned count = 1;                   ///< min(affinity, limit rounded up), at least 1
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
std::optional<CgroupCpuLimit> cgroup_cpu_limit(const std::string& root = "");

/// min(`affinity`, `limit` rounded up), at least 1: the default worker count.
unsigned cpus_to_use(unsigned affinity, const std::optional<CgroupCpuLimit>& limit);

/// affinity_cpus(), cgroup_cpu_limit() and cpus_to_use() together.
UsableCpus usable_cpus();

}  // namespace epochgate::proxy
