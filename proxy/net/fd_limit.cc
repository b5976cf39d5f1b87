// proxy/net/fd_limit.cc
#include "proxy/net/fd_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

#include "metrics/listener_metrics.h"

namespace epochgate::proxy {

namespace {
constexpr uint64_t kPerLoop = 4;     // epoll, eventfd, and slack for libuv internals
constexpr uint64_t kPerWorker = 2;   // its SplicePipe (proxy/net/splice_pipe.h)
constexpr uint64_t kReserve = 32;    // main loop, signals, refresher, watcher, logs, stdio
}  // namespace

uint64_t fds_needed(uint64_t max_connections, uint64_t max_listeners, uint64_t workers,
                    uint64_t admin_max_connections, uint64_t kept_upstreams) {
  return 2 * max_connections + 1 + max_listeners + kPerLoop * (workers + 1) + kPerWorker * workers +
         admin_max_connections + 1 + kReserve + kept_upstreams;
}

std::string fd_budget_statement(const FdLimit& lim, uint64_t need) {
  auto num = [](uint64_t v) { return v == UINT64_MAX ? std::string("unlimited") : std::to_string(v); };
  std::string out = "descriptors: limit " + num(lim.soft);
  out += lim.raised ? " (raised from " + num(lim.soft_before) + " to the hard limit)"
                    : " (hard " + num(lim.hard) + ")";
  out += "; the configured limits can use up to " + std::to_string(need) +
         " (2 per client connection, 1 per listener, the event loops and their splice pipes, admin "
         "connections, kept "
         "upstream connections and a reserve)";
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

void check_fd_budget(const config::Config& c, unsigned workers, uint64_t kept_upstreams,
                     metrics::ListenerMetrics& m) {
  FdLimit lim = raise_fd_limit();
  if (!lim.error.empty()) spdlog::warn("descriptor limit: {}", lim.error);
  uint64_t need = fds_needed(c.limits.max_connections, c.broker_ports.max_listeners, workers,
                             c.admin.enabled ? c.admin.max_connections : 0, kept_upstreams);
  m.set_fd_limit(lim.soft, need);
  spdlog::info("{}", fd_budget_statement(lim, need));
  if (lim.soft < need) {
    uint64_t fit = lim.soft > need - 2 * uint64_t{c.limits.max_connections}
                       ? (lim.soft - (need - 2 * uint64_t{c.limits.max_connections})) / 2
                       : 0;
    spdlog::warn("descriptor limit {} (hard {}) is below the {} that limits.max_connections {} "
                 "(2 each), broker_ports.max_listeners {} and {} workers can use: about {} client "
                 "connections fit; past that, accepts fail with EMFILE (counted in "
                 "epochgate_accept_errors_total) and wait. Raise the limit (ulimit -n, the "
                 "container runtime) or lower limits.max_connections",
                 lim.soft, lim.hard == UINT64_MAX ? std::string("unlimited") : std::to_string(lim.hard),
                 need, c.limits.max_connections, c.broker_ports.max_listeners, workers, fit);
  }
}

}  // namespace epochgate::proxy
