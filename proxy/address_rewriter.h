// proxy/address_rewriter.h: rewrites every broker host:port in a decoded
// response to epochgate's listener for the same node id (DESIGN.md 6). Which
// fields hold addresses, in which versions, is generated from the schema's
// entity marks (codec::visit_addresses in codec/messages/api_traits.h):
// Metadata Brokers[], FindCoordinator NodeId/Host/Port (v0-3) or
// Coordinators[] (v4+), DescribeCluster Brokers[], Produce v10+ / Fetch v16+
// NodeEndpoints (tagged), ShareFetch / ShareAcknowledge NodeEndpoints.
// Node ids never change. No I/O beyond the EndpointMapper.
#pragma once

#include <cstdint>
#include <string>

#include "codec/messages/api_traits.h"
#include "proxy/endpoint_mapper.h"

namespace epochgate::proxy {

/// Outcome of a rewrite: how many endpoints changed, and whether one could
/// not be mapped (then the response must not reach the client).
struct RewriteResult {
  int rewritten = 0;
  bool failed = false;
};

/// One endpoint: node id, host and port fields of any generated struct.
/// Node id -1 ("no node", as in errors) has no address to leak: left as is.
bool rewrite_endpoint(int32_t node_id, std::string& host, int32_t& port, EndpointMapper& m,
                      RewriteResult& res);

/// Rewrites every address `r` carries in `version`; stops at the first node
/// the mapper cannot place (res.failed).
template <class M>
RewriteResult rewrite_addresses(M& r, int16_t version, EndpointMapper& m) {
  RewriteResult res;
  codec::visit_addresses(r, version, [&](int32_t& node_id, std::string& host, int32_t& port) {
    if (!res.failed) rewrite_endpoint(node_id, host, port, m, res);
  });
  return res;
}

}  // namespace epochgate::proxy
