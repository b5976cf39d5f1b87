// bench/kafka_load: a proxy under test (epochgate or HAProxy) run as a child
// process: start, wait until ready, read its RSS and CPU time from /proc,
// stop. Never touches processes it did not start.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace epochgate::bench {

/// One child process. The destructor stops it (SIGTERM, then SIGKILL).
class ProxyProcess {
 public:
  ProxyProcess() = default;
  ~ProxyProcess();
  ProxyProcess(const ProxyProcess&) = delete;
  ProxyProcess& operator=(const ProxyProcess&) = delete;

  /// Starts `argv` with stderr appended to `log_path`. When `ready_prefix` is
  /// not empty, waits up to `timeout_ms` for a stdout line starting with it and
  /// stores the line in ready_line(). Returns false and sets `error` on failure.
  bool start(const std::vector<std::string>& argv, const std::string& log_path,
             const std::string& ready_prefix, int timeout_ms, std::string* error);
  /// SIGTERM, wait up to 5 s, then SIGKILL.
  void stop();

  pid_t pid() const { return pid_; }
  const std::string& ready_line() const { return ready_line_; }
  /// Resident set size in KiB (VmRSS), or -1.
  long rss_kib() const;
  /// utime + stime of all the process's threads in seconds, or -1.
  double cpu_seconds() const;

  /// Value of `key=` in the ready line (e.g. "bootstrap"), or "".
  std::string ready_field(const std::string& key) const;

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string ready_line_;
};

/// A free loopback TCP port (bound then released; a tiny race is accepted).
int free_port();
/// Waits until 127.0.0.1:`port` accepts a connection; false after `timeout_ms`.
bool wait_for_port(int port, int timeout_ms);
/// Body of GET http://host:port/path (HTTP/1.0, loopback, 5 s timeout), or "".
std::string http_get(const std::string& host, int port, const std::string& path);
/// RSS (KiB) of any pid, or -1.
long rss_kib_of(pid_t pid);
/// CPU seconds of any pid (all its threads' time on a CPU, ns resolution from
/// /proc/PID/task/*/schedstat; utime+stime in clock ticks where that is
/// missing), or -1.
double cpu_seconds_of(pid_t pid);
/// CPU seconds of one thread `tid` of this process (its schedstat's time on
/// a CPU, ns resolution), or -1.
double thread_cpu_seconds_of(pid_t tid);

}  // namespace epochgate::bench
