// proxy/fd_limit.cc
#include "proxy/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace epochgate::proxy {

namespace {
constexpr uint64_t kPerLoop = 4;     // epoll, eventfd, and slack for libuv internals
constexpr uint64_t kReserve = 32;    // main loop, signals, refresher, watcher, logs, stdio
}  // namespace

uint64_t fds_needed(uint64_t max_connections, uint64_t max_listeners, uint64_t workers,
                    uint64_t admin_max_connections) {
  return 2 * max_connections + 1 + max_listeners + kPerLoop * (workers + 1) +
         admin_max_connections + 1 + kReserve;
}

std::string fd_budget_statement(const FdLimit& lim, uint64_t need) {
  auto num = [](uint64_t v) { return v == UINT64_MAX ? std::string("unlimited") : std::to_string(v); };
  std::string out = "descriptors: limit " + num(lim.soft);
  out += lim.raised ? " (raised from " + num(lim.soft_before) + " to the hard limit)"
                    : " (hard " + num(lim.hard) + ")";
  out += "; the configured limits can use up to " + std::to_string(need) +
         " (2 per client connection, 1 per listener, the event loops, admin connections and a "
         "reserve)";
  return out;
}

FdLimit raise_fd_limit() {
  FdLimit out;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    out.error = std::string("getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno);
    return out;
  }
  auto as_u64 = [](rlim_t v) { return v == RLIM_INFINITY ? UINT64_MAX : static_cast<uint64_t>(v); };
  out.soft_before = out.soft = as_u64(rl.rlim_cur);
  out.hard = as_u64(rl.rlim_max);
  rlim_t target = rl.rlim_max;
  if (target == RLIM_INFINITY) {
    // The kernel refuses a soft limit above fs.nr_open.
    target = 1048576;
    if (FILE* f = std::fopen("/proc/sys/fs/nr_open", "r")) {
      unsigned long long v = 0;
      if (std::fscanf(f, "%llu", &v) == 1 && v > 0) target = static_cast<rlim_t>(v);
      std::fclose(f);
    }
  }
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < target) {
    rlimit next = rl;
    next.rlim_cur = target;
    if (setrlimit(RLIMIT_NOFILE, &next) == 0) {
      out.soft = as_u64(target);
      out.raised = true;
    } else {
      out.error = std::string("setrlimit(RLIMIT_NOFILE): ") + std::strerror(errno);
    }
  }
  return out;
}

}  // namespace epochgate::proxy
