// proxy/app/port_map.h: the deterministic rule that gives each broker node id its
// own epochgate port, so a restarted proxy hands out the same addresses:
// an explicit map entry wins, else base + node id; base 0 means "ephemeral"
// (tests bind port 0 and read the port back).
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace epochgate::proxy {

/// Port for `node_id` under the rule; 0 = let the kernel pick; nullopt if
/// base + node id does not fit in a port number or the id is negative.
std::optional<uint16_t> port_for_node(int32_t node_id, uint16_t base,
                                      const std::map<int32_t, uint16_t>& explicit_ports);

}  // namespace epochgate::proxy
