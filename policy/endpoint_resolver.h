// policy/endpoint_resolver.h: how answer building learns epochgate's own
// address for a broker node id (the listener that stands for that node), so
// NodeEndpoints never carry an upstream address (docs/architecture.md invariant 4).
// Implemented by the proxy as a pure lookup: it must never bind a socket,
// log, or do any other I/O (listeners are created where nodes are learned).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace epochgate::policy {

/// A client-facing address of epochgate.
struct AdvertisedEndpoint {
  std::string host;
  int32_t port = 0;
};

class EndpointResolver {
 public:
  virtual ~EndpointResolver() = default;
  /// epochgate's advertised host:port for broker `node_id`, or nullopt when
  /// it has no listener for that node (then no hint naming it is sent).
  /// The same answer for the same listener state: no side effects.
  virtual std::optional<AdvertisedEndpoint> advertised(int32_t node_id) const = 0;
};

}  // namespace epochgate::policy
