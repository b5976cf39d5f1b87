// tests/policy/replica_sets_shared_test.cc: partitions whose replica and ISR
// lists are equal share one ReplicaSet in the view (the view's memory per
// partition at 100,000 partitions depends on it), and sharing never changes
// what a partition's replicas or ISR are.
#include <gtest/gtest.h>

#include "policy/replica_set_interner.h"
#include "policy_test_support.h"

namespace epochgate::policy {
namespace {

using testing::metadata;
using testing::PartSpec;
using testing::TopicSpec;
using testing::uuid;

std::vector<int32_t> v(std::initializer_list<int32_t> l) { return l; }

TEST(ReplicaSetsShared, EqualListsShareOneSetAcrossPartitionsAndTopics) {
  MetadataView view;
  view.learn_metadata(metadata({1, 2, 3},
                               {TopicSpec("a", uuid(1),
                                          {PartSpec(0, 1, 5, {1, 2, 3}), PartSpec(1, 2, 5, {1, 2, 3}),
                                           PartSpec(2, 1, 5, {1, 2, 3}, {1, 2}),
                                           PartSpec(3, 2, 5, {2, 3, 1})}),
                                TopicSpec("b", uuid(2), {PartSpec(0, 3, 1, {1, 2, 3})})}),
                      12, 100, Source::kRefresher);
  auto snap = view.snapshot();
  const PartitionEntry* a0 = snap->find_partition("a", 0);
  const PartitionEntry* a1 = snap->find_partition("a", 1);
  const PartitionEntry* a2 = snap->find_partition("a", 2);
  const PartitionEntry* a3 = snap->find_partition("a", 3);
  const PartitionEntry* b0 = snap->find_partition("b", 0);
  ASSERT_TRUE(a0 && a1 && a2 && a3 && b0);
  EXPECT_EQ(a0->replica_set.get(), a1->replica_set.get());
  EXPECT_EQ(a0->replica_set.get(), b0->replica_set.get());
  // Different ISR, or the same nodes in another order: a set of their own.
  EXPECT_NE(a0->replica_set.get(), a2->replica_set.get());
  EXPECT_NE(a0->replica_set.get(), a3->replica_set.get());
  EXPECT_EQ(a0->replica_set->isr, v({1, 2, 3}));
  EXPECT_EQ(a2->replica_set->replicas, v({1, 2, 3}));
  EXPECT_EQ(a2->replica_set->isr, v({1, 2}));
  EXPECT_EQ(a3->replica_set->replicas, v({2, 3, 1}));
  // What /debug/metadata shows for them.
  const std::string json = view.to_json(200);
  EXPECT_NE(json.find("\"isr\":[1,2]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"replicas\":[2,3,1]"), std::string::npos) << json;
}

TEST(ReplicaSetsShared, ListBoundariesAreDistinguished) {
  ReplicaSetInterner interner;
  auto x = interner.get({1}, {2, 3});
  auto y = interner.get({1, 2}, {3});
  auto z = interner.get({1}, {2, 3});
  EXPECT_NE(x.get(), y.get());
  EXPECT_EQ(x.get(), z.get());
  EXPECT_EQ(y->replicas, v({1, 2}));
  EXPECT_EQ(y->isr, v({3}));
  EXPECT_EQ(interner.distinct(), 2u);
}

}  // namespace
}  // namespace epochgate::policy
