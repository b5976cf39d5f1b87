// proxy/app/port_map.cc
#include "proxy/app/port_map.h"

namespace epochgate::proxy {

std::optional<uint16_t> port_for_node(int32_t node_id, uint16_t base,
                                      const std::map<int32_t, uint16_t>& explicit_ports) {
  if (node_id < 0) return std::nullopt;
  if (auto it = explicit_ports.find(node_id); it != explicit_ports.end()) return it->second;
  if (base == 0) return 0;
  int64_t port = int64_t{base} + node_id;
  if (port > 65535) return std::nullopt;
  return static_cast<uint16_t>(port);
}

}  // namespace epochgate::proxy
