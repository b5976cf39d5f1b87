// tests/proxy/fencing/policy_fencing_learn_test.cc: the learn path of PolicyFencing
// for responses it reads without rewriting (ListOffsets, OffsetForLeaderEpoch).
// The broker that answered must reach the view: its own
// NOT_LEADER_OR_FOLLOWER for a partition the view says it leads means the
// view is wrong, so the entry stops fencing until a refresh settles it; the
// same error from another broker (a client that was already behind) does not.
// A Produce success is news to the view only from a broker it does not call
// leader.
#include <gtest/gtest.h>

#include <memory>

#include "config/config.h"
#include "proxy/fencing/policy_fencing.h"
#include "tests/policy/policy_test_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::proxy {
namespace {

using policy::testing::list_offsets_request;
using policy::testing::orders;
using policy::testing::Req;

class NoEndpoints : public policy::EndpointResolver {
 public:
  std::optional<policy::AdvertisedEndpoint> advertised(int32_t) const override {
    return std::nullopt;
  }
};

constexpr int16_t kNotLeader = codec::kErrNotLeaderOrFollower;

codec::ListOffsetsResponse list_offsets_not_leader() {
  codec::ListOffsetsResponse r;
  auto& t = r.topics.emplace_back();
  t.name = "orders";
  auto& p = t.partitions.emplace_back();
  p.partition_index = 0;
  p.error_code = kNotLeader;
  return r;
}

codec::OffsetForLeaderEpochResponse offset_for_leader_epoch_not_leader() {
  codec::OffsetForLeaderEpochResponse r;
  auto& t = r.topics.emplace_back();
  t.topic = "orders";
  auto& p = t.partitions.emplace_back();
  p.partition = 0;
  p.error_code = kNotLeader;
  return r;
}

class PolicyFencingLearn : public ::testing::Test {
 protected:
  void SetUp() override {
    policy::testing::learn_standard_cluster(view_);  // orders p0: leader 1, epoch 5
    fencing_.set_config(std::make_shared<const config::Config>());
  }

  /// Feeds one upstream response of `api_key` at `version`, answered by
  /// `node`, through the policy's steps of the response pipeline (learn,
  /// then amend), as the session's response path does.
  template <class Resp>
  void answer(int16_t api_key, int16_t version, Resp resp, int32_t node) {
    InFlightEntry e;
    e.api_key = api_key;
    e.api_version = version;
    e.upstream_version = version;
    fencing_.learn_response(&resp, version, node);
    EXPECT_FALSE(fencing_.amend_response(e, &resp, version, node))
        << "learning never changes the response";
  }

  bool suspect() { return view_.snapshot()->find_partition("orders", 0)->suspect(); }

  /// What a ListOffsets v4 at a stale epoch (4) to broker 1 now gets.
  policy::Verdict stale_list_offsets_verdict() {
    auto snap = view_.snapshot();
    policy::CompiledPolicy compiled = policy::testing::default_policy();
    policy::DecideContext ctx{*snap, compiled, 1, policy::testing::kLearnedAt + 100, false};
    return policy::decide(list_offsets_request(4, {orders({Req{0, 4}})}), 4, ctx)
        .partitions.at(0)
        .verdict;
  }

  policy::MetadataView view_;
  NoEndpoints endpoints_;
  PolicyFencing fencing_{view_, endpoints_, nullptr};
};

TEST_F(PolicyFencingLearn, ListOffsetsNotLeaderFromTheLeaderDoubtsTheEntry) {
  ASSERT_EQ(stale_list_offsets_verdict(), policy::Verdict::kFence);
  answer(codec::kListOffsets, 4, list_offsets_not_leader(), 1);
  EXPECT_TRUE(suspect()) << "the view's leader said it is not the leader";
  EXPECT_NE(stale_list_offsets_verdict(), policy::Verdict::kFence)
      << "a doubted entry forwards (the broker decides) until a refresh settles it";
}

TEST_F(PolicyFencingLearn, OffsetForLeaderEpochNotLeaderFromTheLeaderDoubtsTheEntry) {
  answer(codec::kOffsetForLeaderEpoch, 3, offset_for_leader_epoch_not_leader(), 1);
  EXPECT_TRUE(suspect());
}

TEST_F(PolicyFencingLearn, NotLeaderFromAnotherBrokerKeepsFencing) {
  answer(codec::kListOffsets, 4, list_offsets_not_leader(), 2);
  answer(codec::kOffsetForLeaderEpoch, 3, offset_for_leader_epoch_not_leader(), 3);
  EXPECT_FALSE(suspect()) << "broker 2 and 3 are not the view's leader: the client was behind";
  EXPECT_EQ(stale_list_offsets_verdict(), policy::Verdict::kFence);
}

TEST_F(PolicyFencingLearn, TheBootstrapListenerCannotTellWhoAnswered) {
  answer(codec::kListOffsets, 4, list_offsets_not_leader(), -1);
  EXPECT_FALSE(suspect());
}

// The response path skips decoding a clean Produce answer only when this
// says the view learns nothing from it: from the view's leader nothing, from
// another broker that the view may be behind (learn_response must see it).
TEST_F(PolicyFencingLearn, ProduceSuccessIsNewsOnlyFromABrokerTheViewDoesNotCallLeader) {
  EXPECT_FALSE(fencing_.produce_success_is_news("orders", {}, 0, 1));
  EXPECT_TRUE(fencing_.produce_success_is_news("orders", {}, 0, 2));
  EXPECT_FALSE(fencing_.produce_success_is_news("orders", {}, 0, -1))
      << "the bootstrap listener cannot tell who answered";
  EXPECT_FALSE(fencing_.produce_success_is_news("unknown-topic", {}, 0, 2));
  answer(codec::kListOffsets, 4, list_offsets_not_leader(), 1);
  ASSERT_TRUE(suspect());
  EXPECT_FALSE(fencing_.produce_success_is_news("orders", {}, 0, 2))
      << "a doubted entry hints nothing: learn_from ignores the success too";
}

}  // namespace
}  // namespace epochgate::proxy
