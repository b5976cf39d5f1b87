// proxy/fencing/address_rewriter.cc
#include "proxy/fencing/address_rewriter.h"

#include <algorithm>

#include "codec/kafka_errors.h"

namespace epochgate::proxy {

bool rewrite_endpoint(int32_t node_id, std::string& host, int32_t& port, EndpointMapper& m,
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

namespace {


// Maps every entry of a node list, removing the ones without a listener.
template <typename List, typename IdOf>
void map_list(List& list, EndpointMapper& m, RewriteResult& res, IdOf id_of) {
  auto dead = std::remove_if(list.begin(), list.end(), [&](auto& e) {
    RewriteResult one;
    rewrite_endpoint(id_of(e), e.host, e.port, m, one);
    res.rewritten += one.rewritten;
    return one.failed;
  });
  int n = static_cast<int>(std::distance(dead, list.end()));
  list.erase(dead, list.end());
  res.dropped += n;
  res.rewritten += n;
}

template <typename Endpoints>
void map_node_endpoints(Endpoints& eps, EndpointMapper& m, RewriteResult& res) {
  map_list(eps, m, res, [](const auto& e) { return e.node_id; });
}

// A coordinator without a listener: answer as a broker without one would.
template <typename C>
void coordinator_unavailable(C& c, RewriteResult& res) {
  c.error_code = codec::kErrCoordinatorNotAvailable;
  c.error_message = std::string("coordinator has no epochgate listener");
  c.node_id = -1;
  c.host.clear();
  c.port = -1;
  res.rewritten++;
  res.dropped++;
}

}  // namespace

RewriteResult rewrite_addresses(codec::MetadataResponse& r, int16_t, EndpointMapper& m) {
  RewriteResult res;
  map_list(r.brokers, m, res, [](const auto& b) { return b.node_id; });
  return res;
}

RewriteResult rewrite_addresses(codec::FindCoordinatorResponse& r, int16_t version,
                                EndpointMapper& m) {
  RewriteResult res;
  if (version < 4) {
    RewriteResult one;
    rewrite_endpoint(r.node_id, r.host, r.port, m, one);
    if (one.failed) coordinator_unavailable(r, res);
    res.rewritten += one.rewritten;
    return res;
  }
  for (auto& c : r.coordinators) {
    RewriteResult one;
    rewrite_endpoint(c.node_id, c.host, c.port, m, one);
    if (one.failed) coordinator_unavailable(c, res);
    res.rewritten += one.rewritten;
  }
  return res;
}

RewriteResult rewrite_addresses(codec::DescribeClusterResponse& r, int16_t, EndpointMapper& m) {
  RewriteResult res;
  map_list(r.brokers, m, res, [](const auto& b) { return b.broker_id; });
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
