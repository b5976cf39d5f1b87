// tests/policy/backfill_hints_test.cc: a broker's NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH without a usable hint (brokers before 3.7) gets one from
// the view, only where the version carries it, only strictly newer than the
// request's epoch, never naming the broker that refused, never from a
// suspect, leaderless or stale entry.
#include <gtest/gtest.h>

#include "policy_test_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

constexpr uint64_t kNow = testing::kLearnedAt + 1000;

class Backfill : public ::testing::Test {
 protected:
  void SetUp() override { testing::learn_standard_cluster(view_); }
  BackfillContext ctx(int32_t target, uint64_t now = kNow) {
    snap_ = view_.snapshot();
    return BackfillContext{*snap_, endpoints_, target, now, 300000};
  }
  static codec::ProduceResponse produce_error(int16_t version, int32_t partition, int16_t error) {
    codec::ProduceResponse r;
    auto& t = r.responses.emplace_back();
    if (version >= 13)
      t.topic_id = testing::uuid(1);
    else
      t.name = "orders";
    auto& p = t.partition_responses.emplace_back();
    p.index = partition;
    p.error_code = error;
    p.base_offset = -1;
    return r;
  }
  MetadataView view_;
  std::shared_ptr<const MetadataSnapshot> snap_;
  testing::FakeEndpoints endpoints_;
};

TEST_F(Backfill, ProduceV10GetsTheViewsLeaderV9CannotCarryIt) {
  for (int16_t v = 0; v <= 13; ++v) {
    auto r = produce_error(v, 0, codec::kErrNotLeaderOrFollower);
    uint32_t n = backfill_hints(r, v, ctx(2));
    const auto& p = r.responses[0].partition_responses[0];
    if (v >= 10) {
      EXPECT_EQ(n, 1u) << "v" << v;
      ASSERT_TRUE(p.current_leader);
      EXPECT_EQ(p.current_leader->leader_id, 1);
      EXPECT_EQ(p.current_leader->leader_epoch, 5);
      testing::expect_endpoints_cover(*r.node_endpoints, 1);
      auto back = testing::decode_body<codec::ProduceResponse>(testing::encode_body(r, v), v);
      EXPECT_TRUE(back == r);
    } else {
      EXPECT_EQ(n, 0u);
      EXPECT_FALSE(p.current_leader);
    }
  }
}

TEST_F(Backfill, BrokerHintWithMinusOneIsReplacedARealOneIsKept) {
  auto r = produce_error(10, 0, codec::kErrNotLeaderOrFollower);
  r.responses[0].partition_responses[0].current_leader =
      codec::ProduceResponse::LeaderIdAndEpoch{-1, -1, {}};
  EXPECT_EQ(backfill_hints(r, 10, ctx(2)), 1u);
  EXPECT_EQ(r.responses[0].partition_responses[0].current_leader->leader_id, 1);

  r = produce_error(10, 0, codec::kErrNotLeaderOrFollower);
  r.responses[0].partition_responses[0].current_leader =
      codec::ProduceResponse::LeaderIdAndEpoch{3, 6, {}};
  EXPECT_EQ(backfill_hints(r, 10, ctx(2)), 0u);
  EXPECT_EQ(r.responses[0].partition_responses[0].current_leader->leader_id, 3);
}

TEST_F(Backfill, NeverNamesTheBrokerThatRefused) {
  auto r = produce_error(10, 0, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(backfill_hints(r, 10, ctx(1)), 0u) << "broker 1 is the view's leader and said no";
  EXPECT_FALSE(r.responses[0].partition_responses[0].current_leader);
}

TEST_F(Backfill, OtherErrorsSuspectStaleAndLeaderlessEntriesGetNothing) {
  auto r = produce_error(10, 0, 0);
  EXPECT_EQ(backfill_hints(r, 10, ctx(2)), 0u);
  r = produce_error(10, 0, 3);
  EXPECT_EQ(backfill_hints(r, 10, ctx(2)), 0u);
  r = produce_error(10, 0, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(backfill_hints(r, 10, ctx(2, testing::kLearnedAt + 300001)), 0u) << "stale view";
  auto conflict = testing::metadata(
      {1},
      {testing::TopicSpec{"orders", testing::uuid(1), {testing::PartSpec{0, 3, 5, {1, 2, 3}}}}});
  view_.learn_metadata(conflict, 12, kNow, Source::kMetadataResponse);
  r = produce_error(10, 0, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(backfill_hints(r, 10, ctx(2)), 0u) << "same epoch, two leaders";
  auto leaderless = testing::metadata(
      {1},
      {testing::TopicSpec{"orders", testing::uuid(1), {testing::PartSpec{1, -1, 8, {1, 2, 3}}}}});
  view_.learn_metadata(leaderless, 12, kNow, Source::kRefresher);
  r = produce_error(10, 1, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(backfill_hints(r, 10, ctx(3)), 0u) << "leader -1 is never hinted";
}

TEST_F(Backfill, FetchV16OnlyAndStrictlyNewerThanTheRequest) {
  auto make = [](int16_t v, int16_t error) {
    codec::FetchResponse r;
    auto& t = r.responses.emplace_back();
    if (v >= 13)
      t.topic_id = testing::uuid(1);
    else
      t.topic = "orders";
    auto& p = t.partitions.emplace_back();
    p.partition_index = 1;
    p.error_code = error;
    p.high_watermark = -1;
    return r;
  };
  for (int16_t v = 4; v <= 18; ++v) {
    auto r = make(v, codec::kErrFencedLeaderEpoch);
    auto req = testing::fetch_request(v, {testing::orders({{1, 6}})});
    uint32_t n = backfill_hints(r, v, &req, ctx(2));
    EXPECT_EQ(n, v >= 16 ? 1u : 0u) << "v" << v;
    if (v >= 16) {
      EXPECT_EQ(r.responses[0].partitions[0].current_leader->leader_epoch, 7);
      testing::expect_endpoints_cover(*r.node_endpoints, 2);
      auto back = testing::decode_body<codec::FetchResponse>(testing::encode_body(r, v), v);
      EXPECT_TRUE(back == r);
    }
  }
  // The request already had epoch 7: the view's 7 is not strictly newer.
  auto r = make(16, codec::kErrFencedLeaderEpoch);
  auto req = testing::fetch_request(16, {testing::orders({{1, 7}})});
  EXPECT_EQ(backfill_hints(r, 16, &req, ctx(2)), 0u);
  // FENCED from the real leader may name it (Kafka does the same).
  r = make(16, codec::kErrFencedLeaderEpoch);
  EXPECT_EQ(backfill_hints(r, 16, nullptr, ctx(2)), 1u);
}

TEST_F(Backfill, ShareResponsesAndNoListener) {
  codec::ShareFetchResponse r;
  auto& t = r.responses.emplace_back();
  t.topic_id = testing::uuid(2);
  auto& p = t.partitions.emplace_back();
  p.partition_index = 0;
  p.error_code = codec::kErrNotLeaderOrFollower;
  p.current_leader = {-1, -1, {}};
  endpoints_.missing = {2};
  EXPECT_EQ(backfill_hints(r, 1, ctx(3)), 0u) << "no epochgate listener for node 2: no hint";
  EXPECT_TRUE(r.node_endpoints.empty());
  endpoints_.missing.clear();
  EXPECT_EQ(backfill_hints(r, 1, ctx(3)), 1u);
  EXPECT_EQ(r.responses[0].partitions[0].current_leader.leader_id, 2);
  testing::expect_endpoints_cover(r.node_endpoints, 2);

  codec::ShareAcknowledgeResponse a;
  auto& at = a.responses.emplace_back();
  at.topic_id = testing::uuid(2);
  auto& ap = at.partitions.emplace_back();
  ap.error_code = codec::kErrNotLeaderOrFollower;
  ap.current_leader = {-1, -1, {}};
  a.node_endpoints.push_back({2, "epochgate.test", 19002, std::nullopt, {}});
  EXPECT_EQ(backfill_hints(a, 2, ctx(4)), 1u);
  EXPECT_EQ(a.node_endpoints.size(), 1u) << "existing entry reused, no duplicate";
}

}  // namespace
}  // namespace epochgate::policy
