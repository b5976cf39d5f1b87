// tests/proxy/tls/sni_names_test.cc: one-port SNI routing's names, both ways.
#include <gtest/gtest.h>

#include "proxy/tls/sni_names.h"

namespace epochgate::proxy::tls {
namespace {

TEST(SniNames, EachNodeHasOneNameAndItRoutesBack) {
  SniNames n("b-$(nodeId).kafka.example.com", "bootstrap.kafka.example.com", "127.0.0.1");
  EXPECT_EQ(n.host_of(0), "b-0.kafka.example.com");
  EXPECT_EQ(n.host_of(1234), "b-1234.kafka.example.com");
  for (int32_t id : {0, 1, 7, 1234, 2147483647}) EXPECT_EQ(n.node_of(n.host_of(id)), id);
  EXPECT_EQ(n.node_of("B-3.KAFKA.example.COM"), 3);  // DNS names have no case
}

TEST(SniNames, BootstrapNamesAndNoName) {
  SniNames n("b-$(nodeId).kafka.example.com", "bootstrap.kafka.example.com", "kafka.example.com");
  EXPECT_EQ(n.node_of(""), kSniBootstrapNode);
  EXPECT_EQ(n.node_of("bootstrap.kafka.example.com"), kSniBootstrapNode);
  EXPECT_EQ(n.node_of("kafka.example.com"), kSniBootstrapNode);
}

TEST(SniNames, OtherNamesAreUnknown) {
  SniNames n("b-$(nodeId).kafka.example.com", "", "127.0.0.1");
  for (const char* bad : {"b-.kafka.example.com", "b-01.kafka.example.com", "b--1.kafka.example.com",
                          "b-1x.kafka.example.com", "b-1.kafka.example.net", "b-99999999999.kafka.example.com",
                          "b-2147483648.kafka.example.com", "evil.example.com", "kafka.example.com"})
    EXPECT_FALSE(n.node_of(bad).has_value()) << bad;
}

TEST(SniNames, PatternWithIdFirstOrLast) {
  SniNames a("$(nodeId).brokers.local", "", "");
  EXPECT_EQ(a.node_of("5.brokers.local"), 5);
  SniNames b("broker$(nodeId)", "", "");
  EXPECT_EQ(b.node_of("broker12"), 12);
  EXPECT_FALSE(b.node_of("broker").has_value());
}

}  // namespace
}  // namespace epochgate::proxy::tls
