// tests/proxy/net/loopback_tcp.h: one connected loopback TCP pair for tests
// that need real sockets (splice(2), libuv's read loop). Owns both
// descriptors until a test hands one over (sets it to -1).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace epochgate::proxy {

/// `a` connected to `b` on 127.0.0.1, both blocking; closed on destruction
/// unless set to -1.
struct LoopbackTcp {
  int a = -1, b = -1;
  LoopbackTcp() {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(l, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(l, 1) == 0 &&
        getsockname(l, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      a = socket(AF_INET, SOCK_STREAM, 0);
      if (connect(a, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
        b = accept(l, nullptr, nullptr);
    }
    close(l);
  }
  ~LoopbackTcp() {
    if (a >= 0) close(a);
    if (b >= 0) close(b);
  }
  LoopbackTcp(const LoopbackTcp&) = delete;
  LoopbackTcp& operator=(const LoopbackTcp&) = delete;
};

}  // namespace epochgate::proxy
