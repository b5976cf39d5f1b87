// Rerouter: what a leader's answer leaves in the client's response. The
// bytes of a leader's unknown tagged fields reach the client as the leader
// sent them, even though its client's read buffer is reused before the
// response is encoded; a partition a leader accepted carries the KIP-951
// hint to it (CurrentLeader and epochgate's NodeEndpoints entry), built by
// policy::HintBuilder from the view, only when the view agrees it leads and
// the client speaks Produce v10 or later.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>

#include "proxy/fencing/policy_fencing.h"
#include "tests/policy/policy_test_support.h"
#include "tests/proxy/reroute/rerouter_rig.h"

namespace epochgate::proxy::testing {
namespace {

constexpr std::string_view kFieldBytes = "leader's own field";

codec::TaggedFields unknown_field(uint32_t tag) {
  return {codec::TaggedField{
      tag, codec::Bytes{reinterpret_cast<const uint8_t*>(kFieldBytes.data()),
                        static_cast<uint32_t>(kFieldBytes.size()), false}}};
}

std::string field_text(const codec::TaggedFields& f, uint32_t tag) {
  for (const auto& t : f)
    if (t.tag == tag) return std::string(t.data.view());
  return "(missing)";
}

TEST(RerouterAnswer, LeadersUnknownTaggedFieldsOutliveItsReadBuffer) {
  RerouterRig rig(reroute_config());
  // Two leaders: the first answer waits for the second before the response
  // is encoded, while its client's read buffer is already reused.
  auto r = rig.request({{.partition = 0, .leader = 2}, {.partition = 1, .leader = 3}},
                       /*version=*/10);
  rig.start(*r);
  FakeBrokerClient& two = *rig.brokers.node(2);
  FakeBrokerClient& three = *rig.brokers.node(3);
  codec::ProduceResponse answer = RerouterRig::leader_answer(two.call());
  answer.responses.at(0).partition_responses.at(0).unknown_tagged_fields = unknown_field(90);
  auto& ep = answer.node_endpoints.emplace().emplace_back();
  ep.node_id = 2;
  ep.host = "broker-2";
  ep.port = 9092;
  ep.unknown_tagged_fields = unknown_field(91);
  two.answer(answer);
  ASSERT_FALSE(r->entry.ready);
  three.answer(RerouterRig::leader_answer(three.call()));
  ASSERT_TRUE(r->entry.ready);
  std::optional<codec::ProduceResponse> got = RerouterRig::response_of(*r);
  ASSERT_TRUE(got.has_value());
  bool seen = false;
  for (const auto& p : got->responses.at(0).partition_responses) {
    if (p.index != 0) continue;
    seen = true;
    EXPECT_EQ(p.error_code, 0);
    EXPECT_EQ(field_text(p.unknown_tagged_fields, 90), kFieldBytes);
  }
  EXPECT_TRUE(seen);
  ASSERT_TRUE(got->node_endpoints.has_value());
  bool endpoint = false;
  for (const auto& n : *got->node_endpoints) {
    if (n.node_id != 2) continue;
    endpoint = true;
    EXPECT_EQ(n.host, "epochgate") << "an upstream address reached the client";
    EXPECT_EQ(field_text(n.unknown_tagged_fields, 91), kFieldBytes);
  }
  EXPECT_TRUE(endpoint);
}

/// A rig whose view is the policy's own (PolicyFencing over the standard
/// cluster: orders p1 leader 2 epoch 7, node 2 in rack-0), with epochgate's
/// listeners at epochgate.test:19000+n.
class RerouterHint : public ::testing::Test {
 protected:
  void SetUp() override {
    policy::testing::learn_standard_cluster(view_);
    fencing_.set_config(std::make_shared<const config::Config>());
    rig_.ctx.fencing = &fencing_;
  }

  /// Reroutes a write of orders p1 to node 2 at `version`; node 2 accepts it.
  codec::ProduceResponse::PartitionProduceResponse accepted_by_two(int16_t version,
                                                                   codec::ProduceResponse* all) {
    auto r = rig_.request({{.partition = 1, .leader = 2, .epoch = 7, .topic = "orders"}}, version);
    rig_.start(*r);
    FakeBrokerClient& two = *rig_.brokers.node(2);
    two.answer(RerouterRig::leader_answer(two.call()));
    EXPECT_TRUE(r->entry.ready);
    std::optional<codec::ProduceResponse> got = RerouterRig::response_of(*r);
    EXPECT_TRUE(got.has_value());
    if (!got) return {};
    *all = *got;
    return got->responses.at(0).partition_responses.at(0);
  }

  policy::MetadataView view_;
  policy::testing::FakeEndpoints endpoints_;
  PolicyFencing fencing_{view_, endpoints_, nullptr};
  RerouterRig rig_{reroute_config()};
};

TEST_F(RerouterHint, AcceptedPartitionNamesItsLeaderAndItsListener) {
  codec::ProduceResponse all;
  auto p = accepted_by_two(10, &all);
  EXPECT_EQ(p.error_code, 0);
  ASSERT_TRUE(p.current_leader.has_value());
  EXPECT_EQ(p.current_leader->leader_id, 2);
  EXPECT_EQ(p.current_leader->leader_epoch, 7);
  ASSERT_TRUE(all.node_endpoints.has_value());
  ASSERT_EQ(all.node_endpoints->size(), 1u);
  const auto& n = all.node_endpoints->front();
  EXPECT_EQ(n.node_id, 2);
  EXPECT_EQ(n.host, "epochgate.test");
  EXPECT_EQ(n.port, 19002);
  EXPECT_EQ(n.rack, std::optional<std::string>("rack-0")) << "the view's rack, as every hint has";
}

TEST_F(RerouterHint, NoHintBelowProduceV10) {
  codec::ProduceResponse all;
  auto p = accepted_by_two(9, &all);
  EXPECT_EQ(p.error_code, 0);
  EXPECT_FALSE(p.current_leader.has_value());
}

TEST_F(RerouterHint, NoHintWhenTheViewNamesAnotherLeader) {
  // orders p1 moved to node 3 in the view while the write went to node 2.
  policy::testing::learn_standard_cluster(view_);
  auto md = policy::testing::metadata(
      {1, 2, 3, 4},
      {policy::testing::TopicSpec{"orders", policy::testing::uuid(1),
                                  {policy::testing::PartSpec{1, 3, 8, {3, 2, 1}}}}});
  view_.learn_metadata(md, 12, policy::testing::kLearnedAt + 1, policy::Source::kRefresher);
  codec::ProduceResponse all;
  auto p = accepted_by_two(10, &all);
  EXPECT_EQ(p.error_code, 0);
  EXPECT_FALSE(p.current_leader.has_value());
  EXPECT_FALSE(all.node_endpoints.has_value() && !all.node_endpoints->empty());
}

TEST_F(RerouterHint, NoHintForALeaderWithoutAListener) {
  endpoints_.missing = {2};
  codec::ProduceResponse all;
  auto p = accepted_by_two(10, &all);
  EXPECT_EQ(p.error_code, 0);
  EXPECT_FALSE(p.current_leader.has_value()) << "a hint to a node epochgate cannot reach";
}

}  // namespace
}  // namespace epochgate::proxy::testing
