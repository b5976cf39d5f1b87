// proxy/listener_registry.cc
#include "proxy/listener_registry.h"

#include <unistd.h>

#include "proxy/port_map.h"

namespace epochgate::proxy {

namespace {
constexpr int kBacklog = 1024;
}

ListenerRegistry::ListenerRegistry(std::string bind_host, uint16_t port_base,
                                   std::map<int32_t, uint16_t> ports, NewListener on_new)
    : bind_host_(std::move(bind_host)),
      port_base_(port_base),
      explicit_ports_(std::move(ports)),
      on_new_(std::move(on_new)) {}

ListenerRegistry::~ListenerRegistry() { close_all(); }

bool ListenerRegistry::bind_bootstrap(const config::HostPort& listen, std::string& error) {
  ListenSocket s;
  if (!open_listen_socket(listen.host, listen.port, kBacklog, s, error)) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sockets_[kBootstrapNode] = s;
  }
  if (on_new_) on_new_(kBootstrapNode, s.fd);
  return true;
}

std::optional<uint16_t> ListenerRegistry::ensure(int32_t node_id, std::string& error) {
  ListenSocket s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = sockets_.find(node_id); it != sockets_.end()) return it->second.port;
    auto port = port_for_node(node_id, port_base_, explicit_ports_);
    if (!port) {
      error = "node id " + std::to_string(node_id) + ": port base " + std::to_string(port_base_) +
              " + node id does not fit in a port; give it an explicit broker_ports.map entry";
      return std::nullopt;
    }
    if (!open_listen_socket(bind_host_, *port, kBacklog, s, error)) return std::nullopt;
    sockets_[node_id] = s;
  }
  if (on_new_) on_new_(node_id, s.fd);
  return s.port;
}

std::optional<uint16_t> ListenerRegistry::port_of(int32_t node_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = sockets_.find(node_id); it != sockets_.end()) return it->second.port;
  return std::nullopt;
}

std::vector<std::pair<int32_t, ListenSocket>> ListenerRegistry::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {sockets_.begin(), sockets_.end()};
}

void ListenerRegistry::close_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [node, s] : sockets_) {
    if (s.fd >= 0) ::close(s.fd);
    s.fd = -1;
  }
}

}  // namespace epochgate::proxy
