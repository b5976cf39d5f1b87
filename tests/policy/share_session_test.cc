// tests/policy/share_session_test.cc: a ShareFetch or ShareAcknowledge whose
// every partition is fenced still reaches the broker, without the fenced
// partitions, because the broker's share session (KIP-932) must see every
// ShareSessionEpoch: one it never saw makes it answer the client's next
// request with SHARE_SESSION_NOT_FOUND or INVALID_SHARE_SESSION_EPOCH. The
// client gets one response: the local fences with their hints, plus whatever
// the broker answered for the rest of its session.
#include <gtest/gtest.h>

#include "policy_test_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

using testing::payments;

constexpr uint64_t kNow = testing::kLearnedAt + 1000;

class ShareSession : public ::testing::Test {
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

TEST_F(ShareSession, FullyFencedShareFetchIsForwardedWithoutItsPartitions) {
  for (int16_t v = 0; v <= 2; ++v) {
    SCOPED_TRACE("v" + std::to_string(v));
    auto req = testing::share_fetch_request({payments({{0}})}, true);
    auto d = decide_at(req, v, 3);  // payments p0's leader is 2
    ASSERT_EQ(d.fenced, 1u);
    ASSERT_EQ(d.action, Action::kSplit) << "the broker must still see the session epoch";
    auto fwd = testing::decode_body<codec::ShareFetchRequest>(
        testing::encode_body(rewrite_request(req, v, d), v), v);
    EXPECT_EQ(fwd.share_session_epoch, req.share_session_epoch);
    EXPECT_EQ(fwd.member_id, req.member_id);
    EXPECT_TRUE(fwd.topics.empty()) << "the fenced partition and its acknowledgements stay here";

    // The broker answers for another partition of its session.
    codec::ShareFetchResponse up;
    up.acquisition_lock_timeout_ms = 15000;
    auto& t = up.responses.emplace_back();
    t.topic_id = testing::uuid(1);
    t.partitions.emplace_back().partition_index = 1;
    auto local = build_local_response(req, v, d, *snap_, endpoints_);
    auto merged = testing::decode_body<codec::ShareFetchResponse>(
        testing::encode_body(merge_responses(req, v, d, up, local), v), v);
    ASSERT_EQ(merged.responses.size(), 2u);
    const auto& fenced = merged.responses[0].partitions.at(0);
    EXPECT_EQ(merged.responses[0].topic_id, testing::uuid(2));
    EXPECT_EQ(fenced.error_code, codec::kErrNotLeaderOrFollower);
    EXPECT_EQ(fenced.acknowledge_error_code, codec::kErrNotLeaderOrFollower);
    EXPECT_EQ(fenced.current_leader.leader_id, 2);
    testing::expect_endpoints_cover(merged.node_endpoints, 2);
    EXPECT_EQ(merged.responses[1].partitions.at(0).partition_index, 1) << "the broker's part";
    if (v >= 1) {
      EXPECT_EQ(merged.acquisition_lock_timeout_ms, 15000) << "broker's fields kept";
    }
  }
}

TEST_F(ShareSession, FullyFencedShareAcknowledgeIsForwardedWithoutItsPartitions) {
  auto req = testing::share_acknowledge_request({payments({{0}})});
  auto d = decide_at(req, 2, 4);
  ASSERT_EQ(d.action, Action::kSplit);
  auto fwd = rewrite_request(req, 2, d);
  EXPECT_EQ(fwd.share_session_epoch, 2);
  EXPECT_TRUE(fwd.topics.empty());
  auto merged = merge_responses(req, 2, d, codec::ShareAcknowledgeResponse{},
                                build_local_response(req, 2, d, *snap_, endpoints_));
  ASSERT_EQ(merged.responses.size(), 1u);
  EXPECT_EQ(merged.responses[0].partitions.at(0).error_code, codec::kErrNotLeaderOrFollower);
}

TEST_F(ShareSession, OtherFullyFencedRequestsAreStillAnsweredLocally) {
  auto produce = testing::produce_request(10, {testing::orders({{0}, {2}})});
  EXPECT_EQ(decide_at(produce, 10, 2).action, Action::kAnswerLocally);
  auto state = testing::read_state_request({testing::orders({{0, 4}})});
  EXPECT_EQ(decide_at(state, 0, 1).action, Action::kAnswerLocally);
}

}  // namespace
}  // namespace epochgate::policy
