// proxy/listener_registry.h: the bootstrap listener and one listener per
// broker node id (DESIGN.md 3). Thread-safe: a worker that meets a new node id
// in a response binds its socket synchronously (so the listener exists before
// the response reaches the client), then every worker is told to accept on it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/listen_socket.h"

namespace epochgate::proxy {

/// Node id used for the bootstrap listener.
inline constexpr int32_t kBootstrapNode = -1;

/// Owns the listening sockets; workers accept on dups of them.
class ListenerRegistry {
 public:
  /// `on_new` runs (in the calling thread) after a socket is bound, so the
  /// application can hand it to every worker.
  using NewListener = std::function<void(int32_t node_id, int fd)>;

  ListenerRegistry(std::string bind_host, uint16_t port_base, std::map<int32_t, uint16_t> ports,
                   NewListener on_new);
  ~ListenerRegistry();

  /// Binds the bootstrap listener. false with `error` on failure.
  bool bind_bootstrap(const config::HostPort& listen, std::string& error);
  /// Port of `node_id`'s listener, binding it first if it is new. nullopt with
  /// `error` when the port rule gives nothing or the bind fails.
  std::optional<uint16_t> ensure(int32_t node_id, std::string& error);
  /// Port of an existing listener (bootstrap: kBootstrapNode).
  std::optional<uint16_t> port_of(int32_t node_id) const;
  /// Snapshot of every listener: node id -> (fd, port).
  std::vector<std::pair<int32_t, ListenSocket>> all() const;
  /// Closes every listening descriptor (workers close their own dups).
  void close_all();

 private:
  mutable std::mutex mu_;
  std::string bind_host_;
  uint16_t port_base_;
  std::map<int32_t, uint16_t> explicit_ports_;
  NewListener on_new_;
  std::map<int32_t, ListenSocket> sockets_;
};

}  // namespace epochgate::proxy
