// proxy/address_rewriter.cc
#include "proxy/address_rewriter.h"

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

}  // namespace epochgate::proxy
