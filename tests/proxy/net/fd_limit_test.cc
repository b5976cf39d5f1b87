// tests/proxy/net/fd_limit_test.cc: the descriptor budget: what the limits can
// use, and raising the soft RLIMIT_NOFILE to the hard one (in a child
// process, so the test binary's own limit is untouched).
#include "proxy/net/fd_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace epochgate::proxy {
namespace {

TEST(FdLimit, TwoDescriptorsPerConnectionOnePerListener) {
  uint64_t base = fds_needed(0, 0, 1, 0);
  EXPECT_EQ(fds_needed(10000, 0, 1, 0) - base, 20000u);
  EXPECT_EQ(fds_needed(0, 256, 1, 0) - base, 256u);
  // Workers do not multiply listeners (one descriptor per listener).
  EXPECT_EQ(fds_needed(0, 256, 8, 0) - fds_needed(0, 0, 8, 0), 256u);
  EXPECT_EQ(fds_needed(0, 0, 1, 64) - base, 64u);
}

TEST(FdLimit, KeptUpstreamConnectionsAreCounted) {
  EXPECT_EQ(fds_needed(100, 4, 2, 0, 136) - fds_needed(100, 4, 2, 0), 136u);
}

TEST(FdLimit, EachWorkersSplicePipeIsCounted) {
  // Per worker: its loop's share and the two descriptors of its splice pipe.
  EXPECT_EQ(fds_needed(0, 0, 2, 0) - fds_needed(0, 0, 1, 0), 4u + 2u);
}

TEST(FdLimit, SoftLimitIsRaisedToTheHardLimit) {
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 128) GTEST_SKIP() << "hard limit too low";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit low = rl;
    low.rlim_cur = 64;
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) _exit(2);
    FdLimit got = raise_fd_limit();
    rlimit now{};
    getrlimit(RLIMIT_NOFILE, &now);
    bool ok = got.raised && got.soft_before == 64 && now.rlim_cur > 64 &&
              (rl.rlim_max == RLIM_INFINITY || now.rlim_cur == rl.rlim_max) &&
              got.soft == static_cast<uint64_t>(now.rlim_cur);
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(FdLimit, StatementNamesTheLimitAndTheNeed) {
  FdLimit raised;
  raised.soft_before = 1024;
  raised.soft = 20000;
  raised.hard = 20000;
  raised.raised = true;
  const std::string a = fd_budget_statement(raised, 20145);
  EXPECT_NE(a.find("limit 20000 (raised from 1024"), std::string::npos) << a;
  EXPECT_NE(a.find("up to 20145"), std::string::npos) << a;
  FdLimit as_found;
  as_found.soft_before = as_found.soft = 65536;
  as_found.hard = UINT64_MAX;
  const std::string b = fd_budget_statement(as_found, 100);
  EXPECT_NE(b.find("limit 65536 (hard unlimited)"), std::string::npos) << b;
  EXPECT_NE(b.find("up to 100 "), std::string::npos) << b;
}

}  // namespace
}  // namespace epochgate::proxy
