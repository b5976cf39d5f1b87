// tests/proxy/fencing/address_rewriter_test.cc: no upstream address survives a rewrite.
#include "proxy/fencing/address_rewriter.h"

#include <gtest/gtest.h>

#include <map>

namespace epochgate::proxy {
namespace {

class FakeMapper : public EndpointMapper {
 public:
  bool advertise(int32_t node_id, std::string_view host, int32_t port,
                 AdvertisedAddress& out) override {
    learned[node_id] = std::string(host) + ":" + std::to_string(port);
    if (node_id == 99) return false;  // no listener possible
    out.host = "proxy.local";
    out.port = 30000 + node_id;
    return true;
  }
  std::map<int32_t, std::string> learned;
};

TEST(RewriteAddresses, MetadataBrokersGetProxyAddressesAndKeepNodeIds) {
  codec::MetadataResponse m;
  m.brokers.resize(2);
  m.brokers[0].node_id = 1;
  m.brokers[0].host = "broker-1.internal";
  m.brokers[0].port = 9092;
  m.brokers[1].node_id = 2;
  m.brokers[1].host = "broker-2.internal";
  m.brokers[1].port = 9092;
  FakeMapper f;
  RewriteResult r = rewrite_addresses(m, 12, f);
  EXPECT_EQ(r.rewritten, 2);
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(m.brokers[0].node_id, 1);
  EXPECT_EQ(m.brokers[0].host, "proxy.local");
  EXPECT_EQ(m.brokers[1].port, 30002);
  EXPECT_EQ(f.learned[2], "broker-2.internal:9092");
}

TEST(RewriteAddresses, FindCoordinatorBothShapes) {
  codec::FindCoordinatorResponse old;
  old.node_id = 3;
  old.host = "b3";
  old.port = 9092;
  FakeMapper f;
  EXPECT_EQ(rewrite_addresses(old, 2, f).rewritten, 1);
  EXPECT_EQ(old.port, 30003);

  codec::FindCoordinatorResponse v4;
  v4.coordinators.resize(2);
  v4.coordinators[0].node_id = 1;
  v4.coordinators[0].host = "b1";
  v4.coordinators[1].node_id = -1;  // error: no coordinator, no address
  v4.coordinators[1].host = "";
  v4.coordinators[1].port = -1;
  EXPECT_EQ(rewrite_addresses(v4, 4, f).rewritten, 1);
  EXPECT_EQ(v4.coordinators[1].port, -1);
}

TEST(RewriteAddresses, NodeEndpointsInProduceAndFetch) {
  codec::ProduceResponse p;
  p.node_endpoints.emplace(1);
  (*p.node_endpoints)[0].node_id = 2;
  (*p.node_endpoints)[0].host = "b2";
  FakeMapper f;
  EXPECT_EQ(rewrite_addresses(p, 10, f).rewritten, 1);
  EXPECT_EQ((*p.node_endpoints)[0].host, "proxy.local");

  codec::FetchResponse fr;
  EXPECT_EQ(rewrite_addresses(fr, 16, f).rewritten, 0);  // no NodeEndpoints tag: nothing to do
}

// A node without a listener (over broker_ports limits, bind failed) is left
// out: the client still gets every other broker and never an upstream address.
TEST(RewriteAddresses, NodeWithoutListenerIsLeftOutOfBrokerLists) {
  codec::DescribeClusterResponse d;
  d.brokers.resize(3);
  for (int i = 0; i < 3; ++i) {
    d.brokers[i].broker_id = i == 1 ? 99 : i + 1;
    d.brokers[i].host = "b" + std::to_string(i);
  }
  FakeMapper f;
  RewriteResult r = rewrite_addresses(d, 1, f);
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(r.dropped, 1);
  ASSERT_EQ(d.brokers.size(), 2u);
  EXPECT_EQ(d.brokers[0].broker_id, 1);
  EXPECT_EQ(d.brokers[1].broker_id, 3);
  for (const auto& b : d.brokers) EXPECT_EQ(b.host, "proxy.local");

  codec::MetadataResponse m;
  m.brokers.resize(2);
  m.brokers[0].node_id = 99;
  m.brokers[0].host = "upstream-99";
  m.brokers[1].node_id = 2;
  m.brokers[1].host = "upstream-2";
  r = rewrite_addresses(m, 12, f);
  EXPECT_FALSE(r.failed);
  ASSERT_EQ(m.brokers.size(), 1u);
  EXPECT_EQ(m.brokers[0].node_id, 2);

  codec::ProduceResponse p;
  p.node_endpoints.emplace(1);
  (*p.node_endpoints)[0].node_id = 99;
  (*p.node_endpoints)[0].host = "upstream-99";
  r = rewrite_addresses(p, 10, f);
  EXPECT_FALSE(r.failed);
  EXPECT_TRUE(p.node_endpoints->empty());
}

TEST(RewriteAddresses, CoordinatorWithoutListenerIsNotAvailable) {
  FakeMapper f;
  codec::FindCoordinatorResponse old;
  old.node_id = 99;
  old.host = "upstream-99";
  old.port = 9092;
  RewriteResult r = rewrite_addresses(old, 2, f);
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(old.error_code, 15);  // COORDINATOR_NOT_AVAILABLE: the client retries
  EXPECT_EQ(old.node_id, -1);
  EXPECT_EQ(old.host, "");

  codec::FindCoordinatorResponse v4;
  v4.coordinators.resize(2);
  v4.coordinators[0].node_id = 99;
  v4.coordinators[0].host = "upstream-99";
  v4.coordinators[1].node_id = 1;
  v4.coordinators[1].host = "b1";
  r = rewrite_addresses(v4, 4, f);
  EXPECT_FALSE(r.failed);
  EXPECT_EQ(v4.coordinators[0].error_code, 15);
  EXPECT_EQ(v4.coordinators[0].host, "");
  EXPECT_EQ(v4.coordinators[1].host, "proxy.local");
}

}  // namespace
}  // namespace epochgate::proxy
