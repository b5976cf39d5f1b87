// bench/kafka_load: child process control and /proc readings.
#include "proxy_process.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace epochgate::bench {
namespace {

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ProxyProcess::~ProxyProcess() { stop(); }

bool ProxyProcess::start(const std::vector<std::string>& argv, const std::string& log_path,
                         const std::string& ready_prefix, int timeout_ms, std::string* error) {
  int out[2];
  if (pipe(out) != 0) {
    *error = "pipe failed";
    return false;
  }
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    *error = "fork failed";
    return false;
  }
  if (pid_ == 0) {
    // A bench killed by a signal (Ctrl-C, a CI timeout) runs no destructor:
    // its proxies must not outlive it, holding ports and CPU. The forking
    // thread is the bench's main thread, which lives as long as the process.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(out[1], STDOUT_FILENO);
    if (log_fd >= 0) dup2(log_fd, STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    close(out[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "exec %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out[1]);
  if (log_fd >= 0) close(log_fd);
  stdout_fd_ = out[0];
  if (ready_prefix.empty()) return true;

  std::string pending;
  const long long deadline = now_ms() + timeout_ms;
  while (now_ms() < deadline) {
    pollfd pfd{stdout_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    char buf[512];
    const ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.rfind(ready_prefix, 0) == 0) {
        ready_line_ = line;
        return true;
      }
    }
  }
  *error = "no '" + ready_prefix + "' line from " + argv[0] + " (see " + log_path + ")";
  stop();
  return false;
}

void ProxyProcess::stop() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    const long long deadline = now_ms() + 5000;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (now_ms() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
}

long ProxyProcess::rss_kib() const { return rss_kib_of(pid_); }
double ProxyProcess::cpu_seconds() const { return cpu_seconds_of(pid_); }

std::string ProxyProcess::ready_field(const std::string& key) const {
  std::istringstream in(ready_line_);
  for (std::string word; in >> word;) {
    if (word.rfind(key + "=", 0) == 0) return word.substr(key.size() + 1);
  }
  return "";
}

long rss_kib_of(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

namespace {

/// A thread's time on a CPU in ns: the first field of its schedstat (the
/// scheduler's own sum, what utime+stime are scaled to). False if unreadable.
bool schedstat_run_ns(const std::string& task_dir, unsigned long long* ns) {
  std::ifstream in(task_dir + "/schedstat");
  return static_cast<bool>(in >> *ns);
}

// utime+stime of the whole process: the kernel reports them in clock ticks
// (10 ms), too coarse for a proxy that spends 20-70 ms in a 3 s round.
double tick_cpu_seconds_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return -1;
  // Fields after the command name start at field 3 (state); utime is 14, stime 15.
  std::istringstream fields(stat.substr(close_paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

double cpu_seconds_of(pid_t pid) {
  if (pid <= 0) return -1;
  // Each thread's schedstat, summed. A thread that exited is missing from
  // the sum: the proxies measured here keep theirs.
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) return tick_cpu_seconds_of(pid);
  unsigned long long ns = 0;
  bool any = false;
  while (dirent* d = readdir(dir)) {
    if (d->d_name[0] == '.') continue;
    unsigned long long run_ns = 0;
    if (schedstat_run_ns(task_dir + "/" + d->d_name, &run_ns)) {
      ns += run_ns;
      any = true;
    }
  }
  closedir(dir);
  return any ? static_cast<double>(ns) / 1e9 : tick_cpu_seconds_of(pid);
}

double thread_cpu_seconds_of(pid_t tid) {
  if (tid <= 0) return -1;
  unsigned long long run_ns = 0;
  return schedstat_run_ns("/proc/self/task/" + std::to_string(tid), &run_ns)
             ? static_cast<double>(run_ns) / 1e9
             : -1;
}

std::string http_get(const std::string& host, int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &addr.sin_addr);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[8192];
      for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  const auto body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

bool wait_for_port(int port, int timeout_ms) {
  const long long deadline = now_ms() + timeout_ms;
  while (now_ms() < deadline) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace epochgate::bench
