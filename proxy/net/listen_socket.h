// proxy/net/listen_socket.h: creates a bound, listening TCP socket (IPv4 or IPv6
// literal, or a name resolved once at start-up). The descriptor is shared by
// every worker loop (each opens its own dup), so the port is known before any
// worker listens and connections queue in the kernel meanwhile.
#pragma once

#include <cstdint>
#include <string>

namespace epochgate::proxy {

/// A listening socket: descriptor and the port it got (useful for port 0).
struct ListenSocket {
  int fd = -1;
  uint16_t port = 0;
};

/// Binds host:port (port 0 = ephemeral) with SO_REUSEADDR and listens with
/// `backlog`. Returns false with a reason in `error` ("127.0.0.1:9092: address in use").
bool open_listen_socket(const std::string& host, uint16_t port, int backlog, ListenSocket& out,
                        std::string& error);

}  // namespace epochgate::proxy
