// tests/policy/confirming_refresh_test.cc: a Metadata report that names
// every partition of a known topic with its own leader, epoch and replicas
// (nearly every periodic refresh) only stamps when the entries were last
// confirmed, in place: no copy of the topic, no new snapshot, the same
// decisions; anything more takes the copy-on-write path as before.
#include <gtest/gtest.h>

#include "policy_test_support.h"

namespace epochgate::policy {
namespace {

using testing::metadata;
using testing::PartSpec;
using testing::TopicSpec;
using testing::uuid;

codec::MetadataResponse orders(int32_t leader0, int32_t epoch0, std::vector<int32_t> replicas0 = {1, 2}) {
  return metadata({1, 2}, {TopicSpec{"orders", uuid(1), {PartSpec{0, leader0, epoch0, replicas0},
                                                         PartSpec{1, 2, 3, {1, 2}}}}});
}

TEST(ConfirmingRefresh, StampsTheEntriesInPlaceAndPublishesNothing) {
  MetadataView view;
  view.learn_metadata(orders(1, 5), 12, 100, Source::kMetadataResponse);
  auto before = view.snapshot();
  LearnReport rep = view.learn_metadata(orders(1, 5), 12, 200, Source::kRefresher);
  EXPECT_FALSE(rep.published);
  EXPECT_EQ(rep.leaders_confirmed, 2u);
  EXPECT_TRUE(rep.urgent_refresh.empty());
  auto after = view.snapshot();
  EXPECT_EQ(after.get(), before.get()) << "no new snapshot for a confirmation";
  for (int32_t p : {0, 1}) {
    const PartitionEntry* e = after->find_partition("orders", p);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->learned_at_ms, 200u);
    EXPECT_EQ(e->source, Source::kRefresher);
    EXPECT_EQ(e->age_ms(250), 50u);
  }
  EXPECT_EQ(after->find_partition("orders", 0)->leader_epoch, 5);
}

TEST(ConfirmingRefresh, AnyChangeTakesTheCopyOnWritePath) {
  MetadataView view;
  view.learn_metadata(orders(1, 5), 12, 100, Source::kMetadataResponse);
  auto before = view.snapshot();
  // Partition 0 moves: a new snapshot; the old one still says what it said.
  LearnReport rep = view.learn_metadata(orders(2, 6), 12, 200, Source::kRefresher);
  EXPECT_TRUE(rep.published);
  EXPECT_EQ(rep.epochs_advanced, 1u);
  EXPECT_NE(view.snapshot().get(), before.get());
  EXPECT_EQ(before->find_partition("orders", 0)->leader_epoch, 5);
  EXPECT_EQ(before->find_partition("orders", 0)->learned_at_ms, 100u)
      << "a stamp on the copy never reaches the old snapshot";
  EXPECT_EQ(view.snapshot()->find_partition("orders", 1)->learned_at_ms, 200u);
  // New replicas at the same leader and epoch: published too.
  rep = view.learn_metadata(orders(2, 6, {2, 3}), 12, 300, Source::kRefresher);
  EXPECT_TRUE(rep.published);
  EXPECT_EQ(view.snapshot()->find_partition("orders", 0)->replica_set->replicas,
            (std::vector<int32_t>{2, 3}));
}

TEST(ConfirmingRefresh, TheRefreshersConfirmationStillClearsADoubt) {
  MetadataView view;
  view.learn_metadata(orders(1, 5), 12, 100, Source::kRefresher);
  // The same epoch without a leader: the entry is doubted (no fencing).
  view.learn_metadata(metadata({1, 2}, {TopicSpec{"orders", uuid(1), {PartSpec{0, -1, 5, {1, 2}}}}}),
                      12, 150, Source::kMetadataResponse);
  ASSERT_TRUE(view.snapshot()->find_partition("orders", 0)->suspect());
  // A client's answer that agrees does not clear it; the refresher's does.
  LearnReport rep = view.learn_metadata(orders(1, 5), 12, 200, Source::kMetadataResponse);
  EXPECT_FALSE(rep.published);
  EXPECT_TRUE(view.snapshot()->find_partition("orders", 0)->suspect());
  rep = view.learn_metadata(orders(1, 5), 12, 300, Source::kRefresher);
  EXPECT_TRUE(rep.published);
  EXPECT_FALSE(view.snapshot()->find_partition("orders", 0)->suspect());
}

TEST(ConfirmingRefresh, AnEpochlessReportDoesNotResetTheAgeOfAnEntryWithAnEpoch) {
  MetadataView view;
  view.learn_metadata(orders(1, 5), 12, 100, Source::kMetadataResponse);
  LearnReport rep = view.learn_metadata(orders(1, 5), 5, 200, Source::kMetadataResponse);
  EXPECT_FALSE(rep.published);
  EXPECT_EQ(view.snapshot()->find_partition("orders", 0)->learned_at_ms, 100u)
      << "Metadata v5 has no epoch: too weak to call the entry current";
}

TEST(ConfirmingRefresh, ANewTopicIdIsNeverAConfirmation) {
  MetadataView view;
  view.learn_metadata(orders(1, 5), 9, 100, Source::kMetadataResponse);  // no id in v9
  ASSERT_EQ(view.snapshot()->find_topic("orders")->id, codec::Uuid{});
  LearnReport rep = view.learn_metadata(orders(1, 5), 12, 200, Source::kRefresher);
  EXPECT_TRUE(rep.published) << "the id is learned";
  EXPECT_EQ(view.snapshot()->find_topic("orders")->id, uuid(1));
}

}  // namespace
}  // namespace epochgate::policy
