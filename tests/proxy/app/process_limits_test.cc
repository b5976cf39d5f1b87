// tests/proxy/app/process_limits_test.cc: the defaults follow what a process
// may use. The worker count: the cgroup CPU limit as /proc and /sys lay it
// out under cgroup v2, v1 and a container's own mount, the lowest along the
// ancestors, rounded up and capped by the affinity mask. The buffer budget:
// half the cgroup memory limit, at most 1 GiB, at least the high watermark.
#include "proxy/app/process_limits.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace epochgate::proxy {
namespace {

namespace fs = std::filesystem;

// A directory laid out like / for the files cgroup_cpu_limit() reads.
class FakeRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("process_limits_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc/self");
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::string root() const { return root_.string(); }
  fs::path root_;
};

constexpr const char* kV2Mount =
    "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate\n";

TEST_F(FakeRoot, CgroupV2LimitIsQuotaOverPeriod) {
  put("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  put("proc/self/mountinfo", kV2Mount);
  put("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "50000 100000\n");
  auto limit = cgroup_cpu_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 0.5);
  EXPECT_EQ(limit->file, "/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max");
}

TEST_F(FakeRoot, CgroupV2LowestLimitAlongTheAncestorsWins) {
  put("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  put("proc/self/mountinfo", kV2Mount);
  put("sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
  put("sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n");
  put("sys/fs/cgroup/kubepods/cpu.max", "800000 100000\n");
  auto limit = cgroup_cpu_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 1.5);
  EXPECT_EQ(limit->file, "/sys/fs/cgroup/kubepods/pod1/cpu.max");
}

TEST_F(FakeRoot, CgroupV2MaxEverywhereIsNoLimit) {
  put("proc/self/cgroup", "0::/a\n");
  put("proc/self/mountinfo", kV2Mount);
  put("sys/fs/cgroup/a/cpu.max", "max 100000\n");
  EXPECT_FALSE(cgroup_cpu_limit(root()).has_value());
}

TEST_F(FakeRoot, ContainerSeesItsOwnCgroupMountedAsRoot) {
  // Inside a container's cgroup namespace the path is "/" and the limit sits
  // in the mount point itself.
  put("proc/self/cgroup", "0::/\n");
  put("proc/self/mountinfo", kV2Mount);
  put("sys/fs/cgroup/cpu.max", "200000 100000\n");
  auto limit = cgroup_cpu_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 2.0);
}

TEST_F(FakeRoot, MountOfASubtreeMapsThePathBelowItsRoot) {
  // Without a cgroup namespace a container may see the host's path while
  // only its own subtree is mounted (mountinfo's root field names it).
  put("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  put("proc/self/mountinfo",
      "30 23 0:26 /kubepods/pod1 /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n");
  put("sys/fs/cgroup/ctr/cpu.max", "25000 100000\n");
  auto limit = cgroup_cpu_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 0.25);
  EXPECT_EQ(limit->file, "/sys/fs/cgroup/ctr/cpu.max");
}

TEST_F(FakeRoot, APathClimbingOutOfTheMountIsNotReadThere) {
  // A cgroup namespace entered from elsewhere: the process's cgroup is not
  // below the mounted root, so no file under the mount is its own (the
  // mount point's limit is another cgroup's).
  put("proc/self/cgroup", "4:memory:/../other\n");
  put("proc/self/mountinfo", "55 51 0:32 / /sys/fs/cgroup/memory rw - cgroup brk rw,memory\n");
  put("sys/fs/cgroup/memory/memory.limit_in_bytes", "67108864\n");
  put("sys/fs/cgroup/other/memory.limit_in_bytes", "1048576\n");
  EXPECT_FALSE(cgroup_memory_limit(root()).has_value());
  // The host's mount seen from inside such a namespace has the root "/..":
  // the same path is below it, and the mount point is the true root.
  put("proc/self/mountinfo", "56 51 0:32 /.. /sys/fs/cgroup/memory rw - cgroup brk rw,memory\n");
  put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/fs/cgroup/memory/other/memory.limit_in_bytes", "536870912\n");
  auto limit = cgroup_memory_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 536870912.0);
}

TEST_F(FakeRoot, TheMountThatShowsTheCgroupIsUsedNotTheFirstOne) {
  put("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  put("proc/self/mountinfo",
      "30 23 0:26 /kubepods/other /host/other ro - cgroup2 cgroup2 rw\n"
      "31 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  put("host/other/memory.max", "4000000000\n");
  put("sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "268435456\n");
  auto limit = cgroup_memory_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 268435456.0);
  EXPECT_EQ(limit->file, "/sys/fs/cgroup/kubepods/pod1/ctr/memory.max");
}

TEST_F(FakeRoot, CgroupV1QuotaAndPeriod) {
  put("proc/self/cgroup", "4:memory:/x\n3:cpu,cpuacct:/kubepods/pod2\n0::/\n");
  put("proc/self/mountinfo",
      "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
      "33 31 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "34 31 0:31 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n");
  put("sys/fs/cgroup/cpu,cpuacct/kubepods/pod2/cpu.cfs_quota_us", "300000\n");
  put("sys/fs/cgroup/cpu,cpuacct/kubepods/pod2/cpu.cfs_period_us", "100000\n");
  put("sys/fs/cgroup/cpu,cpuacct/kubepods/cpu.cfs_quota_us", "-1\n");
  put("sys/fs/cgroup/cpu,cpuacct/kubepods/cpu.cfs_period_us", "100000\n");
  auto limit = cgroup_cpu_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 3.0);
  EXPECT_EQ(limit->file, "/sys/fs/cgroup/cpu,cpuacct/kubepods/pod2/cpu.cfs_quota_us");
}

TEST_F(FakeRoot, CgroupV1UnlimitedIsNoLimit) {
  put("proc/self/cgroup", "1:cpu:/\n");
  put("proc/self/mountinfo", "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n");
  put("sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
  put("sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_FALSE(cgroup_cpu_limit(root()).has_value());
}

TEST_F(FakeRoot, EscapedMountPointIsUnescaped) {
  put("proc/self/cgroup", "0::/a\n");
  put("proc/self/mountinfo", "30 23 0:26 / /sys/fs/cg\\040root rw - cgroup2 cgroup2 rw\n");
  put("sys/fs/cg root/a/cpu.max", "100000 100000\n");
  auto limit = cgroup_cpu_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 1.0);
}

TEST_F(FakeRoot, NothingReadableIsNoLimitNotAnError) {
  EXPECT_FALSE(cgroups_readable(root()));
  EXPECT_FALSE(cgroup_cpu_limit(root()).has_value());
  put("proc/self/cgroup", "garbage\n");
  put("proc/self/mountinfo", "also garbage\n");
  EXPECT_FALSE(cgroup_cpu_limit(root()).has_value());
  put("proc/self/cgroup", "0::/a\n");
  put("proc/self/mountinfo", kV2Mount);
  put("sys/fs/cgroup/a/cpu.max", "lots 100000\n");
  EXPECT_FALSE(cgroup_cpu_limit(root()).has_value());
}

TEST_F(FakeRoot, CgroupV2MemoryLimitLowestAlongTheAncestors) {
  put("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  put("proc/self/mountinfo", kV2Mount);
  put("sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n");
  put("sys/fs/cgroup/kubepods/pod1/memory.max", "536870912\n");
  put("sys/fs/cgroup/kubepods/memory.max", "8589934592\n");
  auto limit = cgroup_memory_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 536870912.0);
  EXPECT_EQ(limit->file, "/sys/fs/cgroup/kubepods/pod1/memory.max");
  // The CPU limit is read from its own files: none here.
  EXPECT_FALSE(cgroup_cpu_limit(root()).has_value());
}

TEST_F(FakeRoot, CgroupV1MemoryLimitAndItsNoLimitValue) {
  put("proc/self/cgroup", "4:memory:/pod3\n3:cpu,cpuacct:/pod3\n");
  put("proc/self/mountinfo",
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "33 31 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/fs/cgroup/memory/pod3/memory.limit_in_bytes", "268435456\n");
  auto limit = cgroup_memory_limit(root());
  ASSERT_TRUE(limit.has_value());
  EXPECT_DOUBLE_EQ(limit->value, 268435456.0);
  EXPECT_EQ(limit->file, "/sys/fs/cgroup/memory/pod3/memory.limit_in_bytes");
  put("sys/fs/cgroup/memory/pod3/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_FALSE(cgroup_memory_limit(root()).has_value());
}

TEST(BufferBudgetFor, HalfTheMemoryLimitAtMostOneGibAtLeastTheHighWatermark) {
  constexpr uint64_t kMiB = 1 << 20;
  EXPECT_EQ(buffer_budget_for(std::nullopt, 4 * kMiB), 1024 * kMiB);
  EXPECT_EQ(buffer_budget_for(CgroupLimit{512.0 * kMiB, "f"}, 4 * kMiB), 256 * kMiB);
  EXPECT_EQ(buffer_budget_for(CgroupLimit{16384.0 * kMiB, "f"}, 4 * kMiB), 1024 * kMiB);
  EXPECT_EQ(buffer_budget_for(CgroupLimit{4.0 * kMiB, "f"}, 4 * kMiB), 4 * kMiB);
}

TEST(CpusToUse, LimitRoundedUpAndCappedByAffinity) {
  EXPECT_EQ(cpus_to_use(32, std::nullopt), 32u);
  EXPECT_EQ(cpus_to_use(32, CgroupLimit{0.5, "f"}), 1u);
  EXPECT_EQ(cpus_to_use(32, CgroupLimit{1.0, "f"}), 1u);
  EXPECT_EQ(cpus_to_use(32, CgroupLimit{1.5, "f"}), 2u);
  EXPECT_EQ(cpus_to_use(32, CgroupLimit{2.0, "f"}), 2u);
  EXPECT_EQ(cpus_to_use(32, CgroupLimit{1.00001, "f"}), 2u);  // 100001 us of 100000: more than one
  EXPECT_EQ(cpus_to_use(2, CgroupLimit{8.0, "f"}), 2u);
  EXPECT_EQ(cpus_to_use(0, std::nullopt), 1u);
}

TEST(AffinityCpus, CountsThisProcessMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(affinity_cpus(), static_cast<unsigned>(CPU_COUNT(&set)));
}

}  // namespace
}  // namespace epochgate::proxy
