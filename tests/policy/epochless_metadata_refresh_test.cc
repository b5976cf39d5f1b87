// tests/policy/epochless_metadata_refresh_test.cc: old clients (Metadata
// below v7: kafka-python 2.0.2, librdkafka 2.0.2) teach the view leaders
// without epochs, and an entry without an epoch never fences. The view asks
// for an urgent refresh (epochgate's own Metadata version carries epochs)
// when such an answer names a partition first or moves its leader, so old
// clients are fenced within one refresh round trip, not the next periodic
// refresh. The refresher's own answers never ask again (a cluster too old
// for epochs would otherwise be asked in a loop).
#include <gtest/gtest.h>

#include "policy_test_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

using testing::fetch_request;
using testing::asks_for;
using testing::metadata;
using testing::PartSpec;
using testing::produce_request;
using testing::Req;
using testing::ReqTopic;
using testing::TopicSpec;
using testing::uuid;

codec::MetadataResponse old_topic(int32_t leader, int32_t epoch = 9) {
  return metadata({1, 2}, {TopicSpec{"old", uuid(4), {PartSpec{0, leader, epoch, {1, 2}},
                                                      PartSpec{1, 2, epoch, {1, 2}}}}});
}

TEST(EpochlessMetadataRefresh, ATopicFirstLearnedWithoutEpochsAsksForARefresh) {
  for (int16_t v = 0; v < 7; ++v) {
    MetadataView view;
    LearnReport rep = view.learn_metadata(old_topic(1), v, 100, Source::kMetadataResponse);
    EXPECT_EQ(rep.learned_without_epoch, 2u) << "v" << v;
    EXPECT_TRUE(asks_for(rep, "old")) << "v" << v;
    EXPECT_EQ(rep.urgent_refresh.size(), 1u) << "one refresh per topic, not per partition";
    // The same answer again: nothing new, no second request.
    rep = view.learn_metadata(old_topic(1), v, 200, Source::kMetadataResponse);
    EXPECT_EQ(rep.learned_without_epoch, 0u);
    EXPECT_TRUE(rep.urgent_refresh.empty()) << "v" << v;
  }
}

TEST(EpochlessMetadataRefresh, TheRefreshTeachesTheEpochAndFencingStarts) {
  MetadataView view;
  view.learn_metadata(old_topic(1), 1, 100, Source::kMetadataResponse);
  CompiledPolicy policy = testing::default_policy();
  auto produce_to_2 = [&](uint64_t now) {
    auto snap = view.snapshot();
    DecideContext ctx{*snap, policy, 2, now, false};
    return decide(produce_request(7, {ReqTopic{"old", {}, {Req{0}}}}), 7, ctx).partitions.at(0);
  };
  EXPECT_NE(produce_to_2(150).verdict, Verdict::kFence) << "no epoch: never fence on ignorance";
  // The urgent refresh at epochgate's version (v12) learns the epoch.
  LearnReport rep = view.learn_metadata(old_topic(1), 12, 200, Source::kRefresher);
  EXPECT_EQ(rep.epochs_advanced, 2u);
  EXPECT_TRUE(rep.urgent_refresh.empty());
  PartitionDecision d = produce_to_2(250);
  EXPECT_EQ(d.verdict, Verdict::kFence) << "a stale producer aimed at broker 2 is fenced now";
  EXPECT_EQ(d.error_code, codec::kErrNotLeaderOrFollower);
}

TEST(EpochlessMetadataRefresh, AnEpochlessLeaderMoveAsksForARefresh) {
  MetadataView view;
  view.learn_metadata(old_topic(1), 5, 100, Source::kMetadataResponse);
  // An old client's Metadata shows the leader moving 1 -> 2.
  LearnReport rep = view.learn_metadata(old_topic(2), 5, 200, Source::kMetadataResponse);
  EXPECT_EQ(rep.learned_without_epoch, 1u) << "only partition 0 moved";
  EXPECT_TRUE(asks_for(rep, "old"));
  EXPECT_EQ(view.snapshot()->find_partition("old", 0)->leader_id, 2);
  // An entry with an epoch: the epoch-less move doubts it (it fences
  // nothing until a refresh confirms the move), and counts as a move report
  // without an epoch, which the refresher confirms at once.
  view.learn_metadata(old_topic(2, 3), 12, 300, Source::kRefresher);
  rep = view.learn_metadata(old_topic(1), 5, 400, Source::kMetadataResponse);
  EXPECT_TRUE(asks_for(rep, "old"));
  EXPECT_EQ(rep.learned_without_epoch, 1u);
  EXPECT_TRUE(view.snapshot()->find_partition("old", 0)->suspect());
  // The same leader again, without an epoch: no move, nothing to confirm.
  view.learn_metadata(old_topic(2, 4), 12, 500, Source::kRefresher);
  rep = view.learn_metadata(old_topic(2), 5, 600, Source::kMetadataResponse);
  EXPECT_EQ(rep.learned_without_epoch, 0u);
  EXPECT_TRUE(rep.urgent_refresh.empty());
}

TEST(EpochlessMetadataRefresh, TheRefreshersOwnEpochlessAnswersNeverAskAgain) {
  MetadataView view;
  LearnReport rep = view.learn_metadata(old_topic(1), 6, 100, Source::kRefresher);
  EXPECT_EQ(rep.learned_without_epoch, 0u);
  EXPECT_TRUE(rep.urgent_refresh.empty());
  rep = view.learn_metadata(old_topic(2), 6, 200, Source::kRefresher);
  EXPECT_TRUE(rep.urgent_refresh.empty());
}

TEST(EpochlessMetadataRefresh, LeaderlessPartitionsDoNotAsk) {
  MetadataView view;
  auto md = metadata({1, 2}, {TopicSpec{"old", {}, {PartSpec{0, -1, -1, {1, 2}}}}});
  LearnReport rep = view.learn_metadata(md, 1, 100, Source::kMetadataResponse);
  EXPECT_EQ(rep.learned_without_epoch, 0u);
  EXPECT_TRUE(rep.urgent_refresh.empty());
}

}  // namespace
}  // namespace epochgate::policy
