// proxy/core/endpoint_mapper.h: the seam between response rewriting and the
// listeners: given a broker's node id and its upstream address, learn the
// address (for routing) and return epochgate's own address for that node id.
// This is where a node named in a response is learned, so its listener is
// created here if it has none (within broker_ports limits).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace epochgate::proxy {

/// epochgate's address for one node id, as clients must see it.
struct AdvertisedAddress {
  std::string host;
  int32_t port = 0;
};

/// Implemented by the application (listener registry + upstream directory).
class EndpointMapper {
 public:
  virtual ~EndpointMapper() = default;
  /// Records `upstream_host:upstream_port` as node `node_id`'s broker address
  /// and fills `out` with epochgate's listener for that node. Returns false if
  /// no listener can exist for it (bind failure, port rule out of range): the
  /// caller must then not let the upstream address reach the client.
  virtual bool advertise(int32_t node_id, std::string_view upstream_host, int32_t upstream_port,
                         AdvertisedAddress& out) = 0;
};

}  // namespace epochgate::proxy
