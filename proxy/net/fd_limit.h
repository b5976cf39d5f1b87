// proxy/net/fd_limit.h: the descriptor budget at start-up. Raises the soft
// RLIMIT_NOFILE to the hard limit and compares it with what the configured
// limits can use, so running out of descriptors is predicted with numbers in
// the log instead of showing up as silently closed clients. Never changes
// the hard limit (that needs privileges and is the operator's decision).
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace epochgate::metrics {
class ListenerMetrics;
}

namespace epochgate::proxy {

/// Descriptors epochgate can use at most: two per client connection (the
/// client and its upstream), one per listener (bootstrap + max_listeners,
/// one each: the Acceptor owns the only descriptor of a listener), a few per
/// event loop (epoll, eventfd; a worker's splice pipe, two), and a reserve for the admin server's
/// connections, the refresher, the config watcher and log files, plus
/// `kept_upstreams`: upstream connections held with no client (the workers'
/// warm-upstream pools, WarmUpstreams::max_descriptors() each).
uint64_t fds_needed(uint64_t max_connections, uint64_t max_listeners, uint64_t workers,
                    uint64_t admin_max_connections, uint64_t kept_upstreams = 0);

/// Outcome of raise_fd_limit().
struct FdLimit {
  uint64_t soft_before = 0;  ///< soft limit found at start
  uint64_t soft = 0;         ///< soft limit in force afterwards
  uint64_t hard = 0;         ///< hard limit (RLIM_INFINITY shown as UINT64_MAX)
  bool raised = false;       ///< setrlimit succeeded with a higher soft limit
  std::string error;         ///< why getrlimit/setrlimit failed, if it did
};

/// The start-up line that states the descriptor budget whether or not it
/// suffices: the soft limit in force (and what it was raised from), the hard
/// limit, and `need` (fds_needed() of the configured limits).
std::string fd_budget_statement(const FdLimit& lim, uint64_t need);

/// Raises the soft RLIMIT_NOFILE of this process to its hard limit
/// (bounded by /proc/sys/fs/nr_open when the hard limit is infinite).
FdLimit raise_fd_limit();

/// Raises the limit and checks it against what `c` can use with `workers`
/// loops and `kept_upstreams` client-less upstream connections (see
/// fds_needed()): sets epochgate_fd_limit / epochgate_fds_needed and logs a
/// warning with the numbers when the limit is short.
void check_fd_budget(const config::Config& c, unsigned workers, uint64_t kept_upstreams,
                     metrics::ListenerMetrics& m);

}  // namespace epochgate::proxy
