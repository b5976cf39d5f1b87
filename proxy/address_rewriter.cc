// proxy/address_rewriter.cc
#include "proxy/address_rewriter.h"

namespace epochgate::proxy {
namespace {

// One endpoint: node id, host and port fields of any generated struct.
bool map_one(int32_t node_id, std::string& host, int32_t& port, EndpointMapper& m,
             RewriteResult& res) {
  if (node_id < 0) return true;  // "no node" (errors): nothing to rewrite
  AdvertisedAddress a;
  if (!m.advertise(node_id, host, port, a)) {
    res.failed = true;
    return false;
  }
  if (host != a.host || port != a.port) {
    host = a.host;
    port = a.port;
    ++res.rewritten;
  }
  return true;
}

template <typename Endpoints>
void map_node_endpoints(Endpoints& eps, EndpointMapper& m, RewriteResult& res) {
  for (auto& ep : eps) {
    if (!map_one(ep.node_id, ep.host, ep.port, m, res)) return;
  }
}

}  // namespace

RewriteResult rewrite_addresses(codec::MetadataResponse& r, int16_t, EndpointMapper& m) {
  RewriteResult res;
  for (auto& b : r.brokers) {
    if (!map_one(b.node_id, b.host, b.port, m, res)) break;
  }
  return res;
}

RewriteResult rewrite_addresses(codec::FindCoordinatorResponse& r, int16_t version,
                                EndpointMapper& m) {
  RewriteResult res;
  if (version < 4) {
    map_one(r.node_id, r.host, r.port, m, res);
    return res;
  }
  for (auto& c : r.coordinators) {
    if (!map_one(c.node_id, c.host, c.port, m, res)) break;
  }
  return res;
}

RewriteResult rewrite_addresses(codec::DescribeClusterResponse& r, int16_t, EndpointMapper& m) {
  RewriteResult res;
  for (auto& b : r.brokers) {
    if (!map_one(b.broker_id, b.host, b.port, m, res)) break;
  }
  return res;
}

RewriteResult rewrite_addresses(codec::ProduceResponse& r, int16_t, EndpointMapper& m) {
  RewriteResult res;
  if (r.node_endpoints) map_node_endpoints(*r.node_endpoints, m, res);
  return res;
}

RewriteResult rewrite_addresses(codec::FetchResponse& r, int16_t, EndpointMapper& m) {
  RewriteResult res;
  if (r.node_endpoints) map_node_endpoints(*r.node_endpoints, m, res);
  return res;
}

RewriteResult rewrite_addresses(codec::ShareFetchResponse& r, int16_t, EndpointMapper& m) {
  RewriteResult res;
  map_node_endpoints(r.node_endpoints, m, res);
  return res;
}

RewriteResult rewrite_addresses(codec::ShareAcknowledgeResponse& r, int16_t, EndpointMapper& m) {
  RewriteResult res;
  map_node_endpoints(r.node_endpoints, m, res);
  return res;
}

}  // namespace epochgate::proxy
