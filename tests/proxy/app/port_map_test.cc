// tests/proxy/app/port_map_test.cc: the node id -> port rule.
#include "proxy/app/port_map.h"

#include <gtest/gtest.h>

namespace epochgate::proxy {
namespace {

TEST(PortMap, BasePlusNodeId) {
  EXPECT_EQ(port_for_node(3, 19000, {}), 19003);
  EXPECT_EQ(port_for_node(0, 19000, {}), 19000);
}

TEST(PortMap, ExplicitEntryWinsForSparseIds) {
  EXPECT_EQ(port_for_node(1001, 19000, {{1001, 19101}}), 19101);
}

TEST(PortMap, BaseZeroMeansEphemeral) { EXPECT_EQ(port_for_node(5, 0, {}), 0); }

TEST(PortMap, OutOfRangeOrNegativeGivesNothing) {
  EXPECT_FALSE(port_for_node(70000, 19000, {}).has_value());
  EXPECT_FALSE(port_for_node(-1, 19000, {}).has_value());
}

}  // namespace
}  // namespace epochgate::proxy
