// tests/policy/persister_frames_test.cc: the share-group persister fencing scenario. No real peer
// sends the share-group persister APIs (keys 83-87) through a proxy, so each
// is encoded as a whole frame with the generated encoder, split and decoded as
// the session would, decided against the view, and answered.
#include <gtest/gtest.h>

#include "policy_test_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

using testing::orders;

constexpr uint64_t kNow = testing::kLearnedAt + 1000;

/// Frame -> header -> body, as the session does.
template <class Request>
Request from_frame(const Request& req, int16_t version) {
  codec::RequestHeader h;
  h.api_key = Request::kApiKey;
  h.api_version = version;
  h.correlation_id = 9;
  h.client_id = std::string_view("broker-7");
  std::vector<uint8_t> frame;
  codec::encode_frame(frame, h, req, version);
  codec::RequestHeader parsed;
  EXPECT_TRUE(codec::parse_request_header(frame.data() + 4, frame.size() - 4, parsed).ok());
  EXPECT_EQ(parsed.header_version, 2) << "persister APIs are flexible from v0";
  Request out;
  EXPECT_TRUE(codec::decode_body(frame.data() + 4 + parsed.size, frame.size() - 4 - parsed.size,
                                 version, out)
                  .ok());
  return out;
}

class PersisterFrames : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::learn_standard_cluster(view_);
    snap_ = view_.snapshot();
  }
  template <class Request>
  RequestDecision decide_frame(const Request& req, int16_t version) {
    EXPECT_EQ(policy_decides(Request::kApiKey, version),
              Request::kApiKey == codec::kReadShareGroupState ||
                  Request::kApiKey == codec::kWriteShareGroupState);
    DecideContext ctx{*snap_, policy_, 7 /* share coordinator */, kNow, true};
    return decide(from_frame(req, version), version, ctx);
  }
  MetadataView view_;
  std::shared_ptr<const MetadataSnapshot> snap_;
  CompiledPolicy policy_ = testing::default_policy();
  testing::FakeEndpoints endpoints_;
};

TEST_F(PersisterFrames, ReadShareGroupStateOlderLeaderEpochIsFenced) {
  auto req = testing::read_state_request({orders({{0, 4}, {1, 7}, {2, 10}})});
  auto d = decide_frame(req, 0);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kFence);
  EXPECT_EQ(d.partitions[0].error_code, codec::kErrFencedLeaderEpoch);
  EXPECT_FALSE(d.partitions[0].has_hint()) << "persister responses carry no hint";
  EXPECT_EQ(d.partitions[1].verdict, Verdict::kPass);
  EXPECT_EQ(d.partitions[2].verdict, Verdict::kPassAndRefresh) << "the view is behind";
  EXPECT_EQ(d.action, Action::kSplit);
  auto local = build_local_response(req, 0, d, *snap_, endpoints_);
  auto back =
      testing::decode_body<codec::ReadShareGroupStateResponse>(testing::encode_body(local, 0), 0);
  ASSERT_EQ(back.results.size(), 1u);
  ASSERT_EQ(back.results[0].partitions.size(), 1u);
  EXPECT_EQ(back.results[0].partitions[0].partition, 0);
  EXPECT_EQ(back.results[0].partitions[0].error_code, codec::kErrFencedLeaderEpoch);
  auto fwd = rewrite_request(req, 0, d);
  EXPECT_EQ(fwd.topics.at(0).partitions.size(), 2u);
}

TEST_F(PersisterFrames, WriteShareGroupStateBothVersions) {
  for (int16_t v = 0; v <= 1; ++v) {
    auto d = decide_frame(testing::write_state_request({orders({{2, 8}}), orders({{0, 5}})}), v);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kFence);
    EXPECT_EQ(d.partitions[1].verdict, Verdict::kPass);
    EXPECT_EQ(d.action, Action::kSplit);
    d = decide_frame(testing::write_state_request({orders({{2, 8}})}), v);
    EXPECT_EQ(d.action, Action::kAnswerLocally);
  }
}

TEST_F(PersisterFrames, InitializeDeleteAndSummaryAreNeverFenced) {
  codec::InitializeShareGroupStateRequest init;
  init.group_id = "g";
  init.topics.push_back({testing::uuid(1), {{0, 0, 0, {}}, {1, 0, 0, {}}}, {}});
  EXPECT_EQ(decide_frame(init, 0).action, Action::kForwardAsIs);
  codec::DeleteShareGroupStateRequest del;
  del.group_id = "g";
  del.topics.push_back({testing::uuid(1), {{0, {}}}, {}});
  EXPECT_EQ(decide_frame(del, 0).action, Action::kForwardAsIs);
  for (int16_t v = 0; v <= 1; ++v) {
    codec::ReadShareGroupStateSummaryRequest sum;
    sum.group_id = "g";
    sum.topics.push_back({testing::uuid(1), {{2, 0, {}}}, {}});
    auto d = decide_frame(sum, v);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
    EXPECT_EQ(d.action, Action::kForwardAsIs);
  }
}

TEST_F(PersisterFrames, ModeOffForPersisterGroup) {
  config::PolicyConfig cfg;
  cfg.rules.push_back({"*", {"persister"}, config::Mode::kOff});
  policy_ = CompiledPolicy::compile(cfg);
  auto d = decide_frame(testing::read_state_request({orders({{0, 1}})}), 0);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  EXPECT_EQ(d.partitions[0].mode, config::Mode::kOff);
}

}  // namespace
}  // namespace epochgate::policy
