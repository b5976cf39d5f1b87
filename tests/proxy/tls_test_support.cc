// tests/proxy/tls_test_support.cc
#include "tests/proxy/tls_test_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace epochgate::test {

namespace {
int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

const std::string& cert_dir() {
  static const std::string dir = [] {
    char tmpl[] = "/tmp/epochgate-tls-unit-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    std::string cmd = std::string(EPOCHGATE_SOURCE_DIR) + "/tools/tls/make-certs.sh set " + tmpl +
                      " >/dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("make-certs.sh failed: " + cmd);
    return std::string(tmpl);
  }();
  return dir;
}

std::string cert(const std::string& name) { return cert_dir() + "/" + name; }

Child::Child(const std::vector<std::string>& argv) {
  char tmpl[] = "/tmp/epochgate-tls-child-XXXXXX";
  int out = mkstemp(tmpl);
  out_path_ = tmpl;
  int in[2];
  if (pipe(in) != 0) throw std::runtime_error("pipe");
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], 0);
    dup2(out, 1);
    dup2(out, 2);
    ::close(in[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  ::close(in[0]);
  ::close(out);
  stdin_fd_ = in[1];
}

Child::~Child() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  if (pid_ > 0 && status_ == -1) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  unlink(out_path_.c_str());
}

std::string Child::output() const {
  std::ifstream in(out_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Child::wait_for(const std::string& text, int ms) const {
  const int64_t end = now_ms() + ms;
  while (now_ms() < end) {
    if (output().find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return output().find(text) != std::string::npos;
}

int Child::wait_exit(int ms) {
  const int64_t end = now_ms() + ms;
  while (status_ == -1 && now_ms() < end) {
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

void Child::write_stdin(const std::string& s) {
  if (stdin_fd_ >= 0) (void)!::write(stdin_fd_, s.data(), s.size());
}

void Child::close_stdin() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
}

SServer::SServer(const std::string& cert_name, std::vector<std::string> extra)
    : child([&] {
        std::vector<std::string> a = {"openssl", "s_server", "-accept", "127.0.0.1:0",
                                      "-cert",   cert(cert_name + ".crt"),
                                      "-key",    cert(cert_name + ".key"),
                                      "-rev"};
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
      }()) {
  if (!child.wait_for("ACCEPT 127.0.0.1:", 5000)) return;
  const std::string o = child.output();
  const auto at = o.find("ACCEPT 127.0.0.1:");
  port = std::atoi(o.c_str() + at + 17);
}

int connect_loopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int listen_loopback(int& port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  listen(fd, 8);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

int accept_within(int listen_fd, int ms) {
  pollfd p{listen_fd, POLLIN, 0};
  if (poll(&p, 1, ms) != 1) return -1;
  return accept(listen_fd, nullptr, nullptr);
}

PumpResult pump(proxy::tls::TlsEngine& e, int fd, const std::string& to_send, size_t want,
                int timeout_ms) {
  PumpResult r;
  bool sent = false;
  bool alive = true;
  const int64_t end = now_ms() + timeout_ms;
  auto flush = [&] {
    uint8_t buf[16384];
    while (e.pending_output() > 0) {
      size_t n = e.take_output(buf, sizeof buf);
      if (::send(fd, buf, n, MSG_NOSIGNAL) < 0) return;
    }
  };
  auto on_plain = [&](const uint8_t* p, size_t n) { r.received.append(reinterpret_cast<const char*>(p), n); };
  alive = e.advance(on_plain);  // a client's ClientHello
  while (alive && now_ms() < end) {
    flush();
    if (e.handshake_done() && !sent) {
      e.send(reinterpret_cast<const uint8_t*>(to_send.data()), to_send.size());
      sent = true;
      continue;
    }
    if (e.handshake_done() && r.received.size() >= want) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) != 1) continue;
    uint8_t buf[16384];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (!e.handshake_done()) e.fail(proxy::tls::Failure::kClosed, "peer closed");
      break;
    }
    e.receive(buf, static_cast<size_t>(n));
    alive = e.advance(on_plain);
  }
  flush();  // an alert for the peer
  if (!e.handshake_done() && e.failure() == proxy::tls::Failure::kNone)
    e.fail(proxy::tls::Failure::kTimeout, "test deadline");
  r.handshake_done = e.handshake_done();
  r.failure = e.failure();
  r.detail = e.detail();
  return r;
}

}  // namespace epochgate::test
