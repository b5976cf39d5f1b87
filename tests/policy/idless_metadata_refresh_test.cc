// tests/policy/idless_metadata_refresh_test.cc: clients whose Metadata has
// leader epochs but no topic ids (v7 to v9: kafka-python 2.0.2's newest,
// older Java clients) teach the view a topic without its id. Without the id a
// lagging broker's lower epoch cannot be told from a recreated topic, and the
// entry stops fencing until a refresh with ids decides. So the view asks for
// an urgent refresh (epochgate's own version, v10+, carries the id) when such
// an answer first names a topic, and then a lower epoch is checked against
// the id instead of switching fencing off.
#include <gtest/gtest.h>

#include "policy_test_support.h"

namespace epochgate::policy {
namespace {

using testing::asks_for;
using testing::metadata;
using testing::PartSpec;
using testing::TopicSpec;
using testing::uuid;

codec::MetadataResponse topic_at(int32_t leader, int32_t epoch) {
  return metadata({1, 2}, {TopicSpec{"t", uuid(7), {PartSpec{0, leader, epoch, {1, 2}},
                                                    PartSpec{1, 2, epoch, {1, 2}}}}});
}

TEST(IdlessMetadataRefresh, ATopicFirstLearnedWithoutItsIdAsksForOneRefresh) {
  for (int16_t v = 7; v < 10; ++v) {
    MetadataView view;
    LearnReport rep = view.learn_metadata(topic_at(1, 5), v, 100, Source::kMetadataResponse);
    EXPECT_EQ(rep.learned_without_topic_id, 1u) << "v" << v << ": one per topic";
    EXPECT_EQ(rep.learned_without_epoch, 0u);
    EXPECT_TRUE(asks_for(rep, "t")) << "v" << v;
    EXPECT_EQ(rep.urgent_refresh.size(), 1u);
    rep = view.learn_metadata(topic_at(1, 5), v, 200, Source::kMetadataResponse);
    EXPECT_EQ(rep.learned_without_topic_id, 0u) << "v" << v << ": the topic is known now";
    EXPECT_TRUE(rep.urgent_refresh.empty()) << "v" << v;
  }
}

TEST(IdlessMetadataRefresh, VersionsWithIdsOrWithoutEpochsDoNotAskForIt) {
  MetadataView with_ids;
  LearnReport rep = with_ids.learn_metadata(topic_at(1, 5), 10, 100, Source::kMetadataResponse);
  EXPECT_EQ(rep.learned_without_topic_id, 0u);
  EXPECT_TRUE(rep.urgent_refresh.empty());
  // Below v7 the epoch-less rule asks already (and its refresh learns both).
  MetadataView old;
  rep = old.learn_metadata(topic_at(1, 5), 5, 100, Source::kMetadataResponse);
  EXPECT_EQ(rep.learned_without_topic_id, 0u);
  EXPECT_GT(rep.learned_without_epoch, 0u);
}

TEST(IdlessMetadataRefresh, TheRefreshersOwnIdlessAnswersNeverAsk) {
  // A cluster too old for topic ids (before Kafka 2.8) answers the refresher
  // without them: asking again would loop.
  MetadataView view;
  LearnReport rep = view.learn_metadata(topic_at(1, 5), 9, 100, Source::kRefresher);
  EXPECT_EQ(rep.learned_without_topic_id, 0u);
  EXPECT_TRUE(rep.urgent_refresh.empty());
}

TEST(IdlessMetadataRefresh, OnceTheRefreshTaughtTheIdALaggingBrokersLowerEpochKeepsFencing) {
  MetadataView view;
  view.learn_metadata(topic_at(1, 5), 9, 100, Source::kMetadataResponse);
  // The urgent refresh at v12 learns the id.
  view.learn_metadata(topic_at(1, 5), 12, 150, Source::kRefresher);
  // A later refresh answered by a broker that has not heard of the move yet:
  // the lower epoch 4, with the same id.
  view.learn_metadata(topic_at(2, 4), 12, 200, Source::kRefresher);
  const PartitionEntry* e = view.snapshot()->find_partition("t", 0);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->leader_epoch, 5);
  EXPECT_EQ(e->leader_id, 1);
  EXPECT_FALSE(e->suspect()) << "one lower report with a matching id is a lagging broker";
}

TEST(IdlessMetadataRefresh, WithoutTheIdTheSameLaggingAnswerStopsFencing) {
  // What the refresh prevents: the view never learned the id, so the same
  // answer cannot be told from a recreated topic.
  MetadataView view;
  view.learn_metadata(topic_at(1, 5), 9, 100, Source::kMetadataResponse);
  view.learn_metadata(topic_at(2, 4), 12, 200, Source::kRefresher);
  const PartitionEntry* e = view.snapshot()->find_partition("t", 0);
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->suspect());
}

}  // namespace
}  // namespace epochgate::policy
