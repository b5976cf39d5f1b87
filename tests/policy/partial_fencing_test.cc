// tests/policy/partial_fencing_test.cc: partial fencing (docs/architecture.md section 7). A request
// with some stale partitions is split: the rewritten request carries only the
// others (epochs injected), the broker's answer and the local answer merge
// into one response in the request's topic and partition order with the
// larger throttle time and the union of NodeEndpoints. Observe mode never
// changes a byte (invariant 7).
#include <gtest/gtest.h>

#include "policy_test_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

using testing::orders;
using testing::payments;

constexpr uint64_t kNow = testing::kLearnedAt + 1000;

class PartialFencing : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::learn_standard_cluster(view_);
    snap_ = view_.snapshot();
  }
  template <class Request>
  RequestDecision decide_at(const Request& req, int16_t version, int32_t target) {
    DecideContext ctx{*snap_, policy_, target, kNow, true};
    return decide(req, version, ctx);
  }
  MetadataView view_;
  std::shared_ptr<const MetadataSnapshot> snap_;
  CompiledPolicy policy_ = testing::default_policy();
  testing::FakeEndpoints endpoints_;
};

codec::ProduceResponse::PartitionProduceResponse produced(int32_t index, int64_t offset) {
  codec::ProduceResponse::PartitionProduceResponse p;
  p.index = index;
  p.base_offset = offset;
  return p;
}

TEST_F(PartialFencing, ProduceSplitAndMergeInRequestOrder) {
  const int16_t v = 10;
  // To broker 2: payments p0 (leader 2) ok, orders p0 (leader 1) stale,
  // orders p1 (leader 2) ok, orders p2 (leader 3) stale.
  auto req = testing::produce_request(v, {payments({{0}}), orders({{0}, {1}, {2}})});
  auto d = decide_at(req, v, 2);
  ASSERT_EQ(d.action, Action::kSplit);
  EXPECT_EQ(d.fenced, 2u);

  auto fwd = rewrite_request(req, v, d);
  ASSERT_EQ(fwd.topic_data.size(), 2u);
  EXPECT_EQ(fwd.topic_data[0].name, "payments");
  ASSERT_EQ(fwd.topic_data[1].partition_data.size(), 1u);
  EXPECT_EQ(fwd.topic_data[1].partition_data[0].index, 1);
  EXPECT_EQ(fwd.topic_data[1].partition_data[0].records.data,
            req.topic_data[1].partition_data[1].records.data)
      << "record bytes are not copied";
  EXPECT_EQ(fwd.acks, req.acks);
  // The forwarded request round-trips through the codec.
  auto fwd_back = testing::decode_body<codec::ProduceRequest>(testing::encode_body(fwd, v), v);
  EXPECT_EQ(fwd_back.topic_data.size(), 2u);

  // The broker answers its part in its own order, throttled, with a hint of
  // its own (already rewritten to epochgate's address by the session).
  codec::ProduceResponse upstream;
  upstream.throttle_time_ms = 250;
  auto& ut = upstream.responses.emplace_back();
  ut.name = "orders";
  ut.partition_responses.push_back(produced(1, 700));
  auto& up = upstream.responses.emplace_back();
  up.name = "payments";
  up.partition_responses.push_back(produced(0, 300));
  upstream.node_endpoints = std::vector<codec::ProduceResponse::NodeEndpoint>{
      {2, "epochgate.test", 19002, std::nullopt, {}},
      {1, "epochgate.test", 19001, std::nullopt, {}}};

  auto local = build_local_response(req, v, d, *snap_, endpoints_);
  local.throttle_time_ms = 0;
  auto merged = merge_responses(req, v, d, upstream, local);

  EXPECT_EQ(merged.throttle_time_ms, 250);
  ASSERT_EQ(merged.responses.size(), 2u);
  EXPECT_EQ(merged.responses[0].name, "payments");
  EXPECT_EQ(merged.responses[0].partition_responses.at(0).base_offset, 300);
  EXPECT_EQ(merged.responses[1].name, "orders");
  const auto& op = merged.responses[1].partition_responses;
  ASSERT_EQ(op.size(), 3u);
  EXPECT_EQ(op[0].index, 0);
  EXPECT_EQ(op[0].error_code, codec::kErrNotLeaderOrFollower);
  EXPECT_TRUE(op[0].current_leader);
  EXPECT_EQ(op[1].index, 1);
  EXPECT_EQ(op[1].base_offset, 700);
  EXPECT_EQ(op[2].index, 2);
  EXPECT_EQ(op[2].error_code, codec::kErrNotLeaderOrFollower);
  ASSERT_TRUE(merged.node_endpoints);
  std::vector<int32_t> ids;
  for (const auto& n : *merged.node_endpoints) ids.push_back(n.node_id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 3})) << "union, deduplicated by node id";
  // And it encodes at the client's version.
  auto back = testing::decode_body<codec::ProduceResponse>(testing::encode_body(merged, v), v);
  EXPECT_TRUE(back == merged);
}

TEST_F(PartialFencing, FetchSplitInjectsAndMergesBrokerExtras) {
  const int16_t v = 12;
  // To broker 1: orders p0 epoch 5 (ok, leader), p1 epoch 6 (stale, view 7),
  // p2 -1 (inject 9: 1 follows p2, and v12 may be served by a follower).
  auto req = testing::fetch_request(v, {orders({{0, 5}, {1, 6}, {2, -1}})});  // sessionless
  auto d = decide_at(req, v, 1);
  ASSERT_EQ(d.action, Action::kSplit);
  EXPECT_EQ(d.injected, 1u);

  auto fwd = rewrite_request(req, v, d);
  ASSERT_EQ(fwd.topics.size(), 1u);
  ASSERT_EQ(fwd.topics[0].partitions.size(), 2u);
  EXPECT_EQ(fwd.topics[0].partitions[0].partition, 0);
  EXPECT_EQ(fwd.topics[0].partitions[0].current_leader_epoch, 5);
  EXPECT_EQ(fwd.topics[0].partitions[1].partition, 2);
  EXPECT_EQ(fwd.topics[0].partitions[1].current_leader_epoch, 9) << "view epoch injected";
  EXPECT_EQ(fwd.session_epoch, -1);
  EXPECT_EQ(req.topics[0].partitions[2].current_leader_epoch, -1) << "original untouched";

  codec::FetchResponse upstream;
  upstream.throttle_time_ms = 5;
  auto& t = upstream.responses.emplace_back();
  t.topic = "orders";
  // The broker also answers p1 (as a fetch session would for a cached
  // partition; the local answer wins) and p5, which the request did not name.
  for (int32_t p : {2, 0, 1, 5}) {
    auto& pd = t.partitions.emplace_back();
    pd.partition_index = p;
    pd.high_watermark = 1000 + p;
  }
  auto& other = upstream.responses.emplace_back();
  other.topic = "payments";
  other.partitions.emplace_back().partition_index = 0;

  auto local = build_local_response(req, v, d, *snap_, endpoints_);
  local.throttle_time_ms = 20;
  auto merged = merge_responses(req, v, d, upstream, local);
  EXPECT_EQ(merged.throttle_time_ms, 20);
  EXPECT_EQ(merged.session_id, 0);
  ASSERT_EQ(merged.responses.size(), 2u);
  const auto& mp = merged.responses[0].partitions;
  ASSERT_EQ(mp.size(), 4u);
  EXPECT_EQ(mp[0].partition_index, 0);
  EXPECT_EQ(mp[0].high_watermark, 1000);
  EXPECT_EQ(mp[1].partition_index, 1);
  EXPECT_EQ(mp[1].error_code, codec::kErrFencedLeaderEpoch);
  EXPECT_EQ(mp[2].partition_index, 2);
  EXPECT_EQ(mp[3].partition_index, 5) << "partitions the request did not name follow";
  EXPECT_EQ(merged.responses[1].topic, "payments") << "topics the request did not name come last";
}

TEST_F(PartialFencing, FetchTopLevelErrorFromUpstreamWins) {
  const int16_t v = 12;
  auto req = testing::fetch_request(v, {orders({{0, 5}, {1, 6}})});
  auto d = decide_at(req, v, 1);
  ASSERT_EQ(d.action, Action::kSplit);
  codec::FetchResponse upstream;
  upstream.error_code = 70;  // FETCH_SESSION_ID_NOT_FOUND
  auto merged =
      merge_responses(req, v, d, upstream, build_local_response(req, v, d, *snap_, endpoints_));
  EXPECT_EQ(merged.error_code, 70);
  EXPECT_TRUE(merged.responses.empty());
}

TEST_F(PartialFencing, TopicsLeftEmptyAreDroppedFromTheForwardedRequest) {
  auto req = testing::produce_request(9, {orders({{0}, {2}}), payments({{0}})});
  auto d = decide_at(req, 9, 2);
  ASSERT_EQ(d.action, Action::kSplit);
  auto fwd = rewrite_request(req, 9, d);
  ASSERT_EQ(fwd.topic_data.size(), 1u);
  EXPECT_EQ(fwd.topic_data[0].name, "payments");
}

TEST_F(PartialFencing, ListOffsetsOffsetForLeaderEpochShareAndPersisterMerge) {
  {
    auto req = testing::list_offsets_request(7, {orders({{0, 5}, {1, 1}})});
    auto d = decide_at(req, 7, 1);
    ASSERT_EQ(d.action, Action::kSplit);
    auto fwd = rewrite_request(req, 7, d);
    ASSERT_EQ(fwd.topics[0].partitions.size(), 1u);
    codec::ListOffsetsResponse up;
    up.throttle_time_ms = 3;
    auto& t = up.topics.emplace_back();
    t.name = "orders";
    auto& p = t.partitions.emplace_back();
    p.partition_index = 0;
    p.offset = 42;
    auto m = merge_responses(req, 7, d, up, build_local_response(req, 7, d, *snap_, endpoints_));
    ASSERT_EQ(m.topics.at(0).partitions.size(), 2u);
    EXPECT_EQ(m.topics[0].partitions[0].offset, 42);
    EXPECT_EQ(m.topics[0].partitions[1].error_code, codec::kErrFencedLeaderEpoch);
    EXPECT_EQ(m.throttle_time_ms, 3);
  }
  {
    auto req = testing::offset_for_leader_epoch_request(3, {orders({{1, 2}, {2, 9}})});
    auto d = decide_at(req, 3, 3);
    ASSERT_EQ(d.action, Action::kSplit);
    codec::OffsetForLeaderEpochResponse up;
    auto& t = up.topics.emplace_back();
    t.topic = "orders";
    t.partitions.push_back({0, 2, 9, 500, {}});
    auto m = merge_responses(req, 3, d, up, build_local_response(req, 3, d, *snap_, endpoints_));
    ASSERT_EQ(m.topics.at(0).partitions.size(), 2u);
    EXPECT_EQ(m.topics[0].partitions[0].partition, 1);
    EXPECT_EQ(m.topics[0].partitions[0].error_code, codec::kErrFencedLeaderEpoch);
    EXPECT_EQ(m.topics[0].partitions[1].end_offset, 500);
  }
  {
    // ShareFetch to broker 2: orders p1 (leader 2) ok, payments p0 (leader 2) ok, orders p0 stale.
    auto req = testing::share_fetch_request({orders({{0}, {1}}), payments({{0}})});
    auto d = decide_at(req, 1, 2);
    ASSERT_EQ(d.action, Action::kSplit);
    auto fwd = rewrite_request(req, 1, d);
    EXPECT_EQ(fwd.topics.at(0).partitions.size(), 1u);
    codec::ShareFetchResponse up;
    up.acquisition_lock_timeout_ms = 30000;
    up.throttle_time_ms = 1;
    for (auto [id, p] : {std::pair{testing::uuid(2), 0}, std::pair{testing::uuid(1), 1}}) {
      auto& t = up.responses.emplace_back();
      t.topic_id = id;
      auto& pd = t.partitions.emplace_back();
      pd.partition_index = p;
      pd.current_leader = {-1, -1, {}};
    }
    auto m = merge_responses(req, 1, d, up, build_local_response(req, 1, d, *snap_, endpoints_));
    EXPECT_EQ(m.acquisition_lock_timeout_ms, 30000);
    ASSERT_EQ(m.responses.size(), 2u);
    EXPECT_EQ(m.responses[0].topic_id, testing::uuid(1));
    ASSERT_EQ(m.responses[0].partitions.size(), 2u);
    EXPECT_EQ(m.responses[0].partitions[0].partition_index, 0);
    EXPECT_EQ(m.responses[0].partitions[0].error_code, codec::kErrNotLeaderOrFollower);
    EXPECT_EQ(m.responses[0].partitions[1].partition_index, 1);
    EXPECT_EQ(m.responses[1].topic_id, testing::uuid(2));
    testing::expect_endpoints_cover(m.node_endpoints, 1);
  }
  {
    auto req = testing::write_state_request({orders({{0, 5}, {1, 6}})});
    auto d = decide_at(req, 1, 9);
    ASSERT_EQ(d.action, Action::kSplit);
    codec::WriteShareGroupStateResponse up;
    auto& t = up.results.emplace_back();
    t.topic_id = testing::uuid(1);
    t.partitions.push_back({0, 0, std::nullopt, {}});
    auto m = merge_responses(req, 1, d, up, build_local_response(req, 1, d, *snap_, endpoints_));
    ASSERT_EQ(m.results.at(0).partitions.size(), 2u);
    EXPECT_EQ(m.results[0].partitions[1].error_code, codec::kErrFencedLeaderEpoch);
  }
}

TEST_F(PartialFencing, ObserveModeNeverChangesAByte) {
  config::PolicyConfig cfg;
  cfg.default_mode = config::Mode::kObserve;
  policy_ = CompiledPolicy::compile(cfg);
  for (int16_t v = 4; v <= 18; ++v) {
    auto req = testing::fetch_request(v, {orders({{0, -1}, {1, 1}, {2, 9}}), payments({{0, 0}})});
    auto bytes = testing::encode_body(req, v);
    auto decoded = testing::decode_body<codec::FetchRequest>(bytes, v);
    auto d = decide_at(decoded, v, 4);
    EXPECT_EQ(d.action, Action::kForwardAsIs) << "v" << v;
    EXPECT_GT(d.observed_fences, 0u);
    EXPECT_EQ(d.fenced + d.injected + d.held, 0u);
    // Even if the session re-encoded, nothing would change.
    EXPECT_EQ(testing::encode_body(rewrite_request(decoded, v, d), v), bytes);
  }
  for (int16_t v = 0; v <= 13; ++v) {
    auto req = testing::produce_request(v, {orders({{0}, {1}, {2}})}, v % 2 ? 0 : -1);
    auto bytes = testing::encode_body(req, v);
    auto decoded = testing::decode_body<codec::ProduceRequest>(bytes, v);
    auto d = decide_at(decoded, v, 2);
    EXPECT_EQ(d.action, Action::kForwardAsIs) << "v" << v;
    EXPECT_EQ(testing::encode_body(rewrite_request(decoded, v, d), v), bytes);
  }
}

TEST_F(PartialFencing, NothingFencedRewriteIsIdentical) {
  auto req = testing::produce_request(9, {orders({{1}})});
  auto d = decide_at(req, 9, 2);
  ASSERT_EQ(d.action, Action::kForwardAsIs);
  EXPECT_EQ(testing::encode_body(rewrite_request(req, 9, d), 9), testing::encode_body(req, 9));
}

}  // namespace
}  // namespace epochgate::policy

namespace epochgate::policy {
namespace {

TEST_F(PartialFencing, FetchSessionSplitKeepsTheSessionAndInjectsNothing) {
  const int16_t v = 13;
  auto req = testing::fetch_request(v, {orders({{0, -1}, {1, 6}})});
  req.session_id = 77;
  req.session_epoch = 3;
  auto d = decide_at(req, v, 1);
  ASSERT_EQ(d.action, Action::kSplit);
  EXPECT_EQ(d.injected, 0u);
  auto fwd = rewrite_request(req, v, d);
  EXPECT_EQ(fwd.session_id, 77);
  EXPECT_EQ(fwd.session_epoch, 3);
  EXPECT_EQ(fwd.topics.at(0).partitions.at(0).current_leader_epoch, -1);
  codec::FetchResponse upstream;
  upstream.session_id = 77;
  auto m =
      merge_responses(req, v, d, upstream, build_local_response(req, v, d, *snap_, endpoints_));
  EXPECT_EQ(m.session_id, 77) << "the broker's session id goes back to the client";
  ASSERT_EQ(m.responses.size(), 1u);
  ASSERT_EQ(m.responses[0].partitions.size(), 1u);
  EXPECT_EQ(m.responses[0].partitions[0].partition_index, 1);
}

}  // namespace
}  // namespace epochgate::policy
