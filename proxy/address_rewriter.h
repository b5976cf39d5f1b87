// proxy/address_rewriter.h: rewrites every broker host:port in a decoded
// response to epochgate's listener for the same node id (DESIGN.md 6).
// Node ids never change. No I/O beyond the EndpointMapper.
#pragma once

#include <cstdint>

#include "codec/messages/describe_cluster_response.h"
#include "codec/messages/fetch_response.h"
#include "codec/messages/find_coordinator_response.h"
#include "codec/messages/metadata_response.h"
#include "codec/messages/produce_response.h"
#include "codec/messages/share_acknowledge_response.h"
#include "codec/messages/share_fetch_response.h"
#include "proxy/endpoint_mapper.h"

namespace epochgate::proxy {

/// Outcome of a rewrite: how many endpoints changed, and whether one could
/// not be mapped (then the response must not reach the client).
struct RewriteResult {
  int rewritten = 0;
  bool failed = false;
};

/// Metadata Brokers[].
RewriteResult rewrite_addresses(codec::MetadataResponse& r, int16_t version, EndpointMapper& m);
/// FindCoordinator: NodeId/Host/Port (v0-3) or Coordinators[] (v4+). Errors
/// (node id -1) are left as they are: there is no address to leak.
RewriteResult rewrite_addresses(codec::FindCoordinatorResponse& r, int16_t version,
                                EndpointMapper& m);
/// DescribeCluster Brokers[].
RewriteResult rewrite_addresses(codec::DescribeClusterResponse& r, int16_t version,
                                EndpointMapper& m);
/// Produce v10+ NodeEndpoints (tagged).
RewriteResult rewrite_addresses(codec::ProduceResponse& r, int16_t version, EndpointMapper& m);
/// Fetch v16+ NodeEndpoints (tagged).
RewriteResult rewrite_addresses(codec::FetchResponse& r, int16_t version, EndpointMapper& m);
/// ShareFetch / ShareAcknowledge NodeEndpoints (regular field, every version).
RewriteResult rewrite_addresses(codec::ShareFetchResponse& r, int16_t version, EndpointMapper& m);
RewriteResult rewrite_addresses(codec::ShareAcknowledgeResponse& r, int16_t version,
                                EndpointMapper& m);

}  // namespace epochgate::proxy
