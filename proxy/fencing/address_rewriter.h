// proxy/fencing/address_rewriter.h: rewrites every broker host:port in a decoded
// response to epochgate's listener for the same node id (docs/architecture.md section 6). Which
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
#include "proxy/core/endpoint_mapper.h"

namespace epochgate::proxy {

/// Outcome of a rewrite: how many endpoints changed (rewritten, or left out
/// because their node has no listener: over broker_ports limits, or its bind
/// failed), and whether one could not be handled at all (then the response
/// must not reach the client). A node without a listener is never
/// advertised with its upstream address: Metadata/DescribeCluster brokers
/// and NodeEndpoints entries are dropped (clients treat the node as
/// unavailable and still use the others), a FindCoordinator answer naming it
/// becomes COORDINATOR_NOT_AVAILABLE (retriable).
struct RewriteResult {
  int rewritten = 0;
  int dropped = 0;  ///< endpoints left out (also counted in rewritten)
  bool failed = false;
};

/// One endpoint: node id, host and port fields of any generated struct.
/// Node id -1 ("no node", as in errors) has no address to leak: left as is.
bool rewrite_endpoint(int32_t node_id, std::string& host, int32_t& port, EndpointMapper& m,
                      RewriteResult& res);

/// The responses whose node lists lose an entry without a listener (these
/// overloads win over the generic walk below): Metadata Brokers[],
/// FindCoordinator (v0-3 fields or Coordinators[] v4+; an error entry with
/// node id -1 is left as it is), DescribeCluster Brokers[], Produce v10+ and
/// Fetch v16+ NodeEndpoints (tagged), ShareFetch / ShareAcknowledge
/// NodeEndpoints.
RewriteResult rewrite_addresses(codec::MetadataResponse& r, int16_t version, EndpointMapper& m);
RewriteResult rewrite_addresses(codec::FindCoordinatorResponse& r, int16_t version,
                                EndpointMapper& m);
RewriteResult rewrite_addresses(codec::DescribeClusterResponse& r, int16_t version,
                                EndpointMapper& m);
RewriteResult rewrite_addresses(codec::ProduceResponse& r, int16_t version, EndpointMapper& m);
RewriteResult rewrite_addresses(codec::FetchResponse& r, int16_t version, EndpointMapper& m);
RewriteResult rewrite_addresses(codec::ShareFetchResponse& r, int16_t version, EndpointMapper& m);
RewriteResult rewrite_addresses(codec::ShareAcknowledgeResponse& r, int16_t version,
                                EndpointMapper& m);

/// Any other response with addresses: rewrites every address `r` carries in
/// `version`; stops at the first node the mapper cannot place (res.failed).
template <class M>
RewriteResult rewrite_addresses(M& r, int16_t version, EndpointMapper& m) {
  RewriteResult res;
  codec::visit_addresses(r, version, [&](int32_t& node_id, std::string& host, int32_t& port) {
    if (!res.failed) rewrite_endpoint(node_id, host, port, m, res);
  });
  return res;
}

}  // namespace epochgate::proxy
