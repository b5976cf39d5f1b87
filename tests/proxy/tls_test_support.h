// tests/proxy/tls_test_support.h: what the TLS unit tests share: the
// certificate set made by tools/tls/make-certs.sh (the openssl command line)
// once per test process, an `openssl s_server` / `s_client` child process as
// the independent peer, and a bounded pump that drives a TlsEngine over a
// real loopback socket. Never a TLS implementation of its own.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proxy/tls/tls_engine.h"

namespace epochgate::test {

/// Directory of the standard certificate set (made on first use).
const std::string& cert_dir();
/// cert_dir() + "/" + name.
std::string cert(const std::string& name);

/// A child process (openssl) with stdin as a pipe and stdout+stderr in a file.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv);
  ~Child();  // kills it (SIGKILL) if still running
  /// Everything it printed so far.
  std::string output() const;
  /// Waits up to `ms` for `text` in output(); true if seen.
  bool wait_for(const std::string& text, int ms) const;
  /// Waits up to `ms` for the exit; returns the status (-1 if still running).
  int wait_exit(int ms);
  void write_stdin(const std::string& s);
  void close_stdin();

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  std::string out_path_;
  int status_ = -1;
};

/// `openssl s_server` on 127.0.0.1, an ephemeral port, echoing lines
/// reversed (-rev); `extra` adds options (-Verify 1 -CAfile ...).
struct SServer {
  explicit SServer(const std::string& cert_name, std::vector<std::string> extra = {});
  Child child;
  int port = 0;
};

/// Result of driving an engine.
struct PumpResult {
  bool handshake_done = false;
  proxy::tls::Failure failure = proxy::tls::Failure::kNone;
  std::string detail;
  std::string received;  ///< plaintext received
};

/// Drives `e` over connected socket `fd`: handshake, then sends `to_send`
/// and reads until `want` plaintext bytes arrived, the connection failed,
/// the peer closed, or `timeout_ms` passed.
PumpResult pump(proxy::tls::TlsEngine& e, int fd, const std::string& to_send, size_t want,
                int timeout_ms = 5000);

/// A connected TCP socket to 127.0.0.1:port (-1 on failure).
int connect_loopback(int port);
/// A listening socket on 127.0.0.1, ephemeral port; `port` receives it.
int listen_loopback(int& port);
/// accept() with a deadline (-1 on timeout).
int accept_within(int listen_fd, int ms);

}  // namespace epochgate::test
