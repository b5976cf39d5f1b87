// tests/policy/unused_topics_test.cc: the view keeps the topics clients use.
// A topic's use time is when the view learned it, then each request the
// policy decides on that names it; a topic unused for the idle time leaves
// the view in one published snapshot, and learning it again starts a new
// idle interval. No sockets, no clocks.
#include <gtest/gtest.h>

#include "policy_test_support.h"

namespace epochgate::policy {
namespace {

using testing::orders;
using testing::produce_request;

// View (policy_test_support.h): orders (3 partitions) and payments (1),
// learned at kLearnedAt.
constexpr uint64_t kIdle = 300000;

TEST(UnusedTopics, TopicsLearnedButNeverNamedLeaveAfterTheIdleTime) {
  MetadataView view;
  testing::learn_standard_cluster(view);
  const auto before = view.snapshot();
  EXPECT_TRUE(view.forget_unused_topics(testing::kLearnedAt + kIdle, kIdle).empty())
      << "exactly the idle time is not past it";
  EXPECT_EQ(view.snapshot().get(), before.get()) << "nothing dropped: nothing published";

  const auto gone = view.forget_unused_topics(testing::kLearnedAt + kIdle + 1, kIdle);
  EXPECT_EQ(gone, (std::vector<std::string>{"orders", "payments"}));
  const auto after = view.snapshot();
  EXPECT_EQ(after->find_topic("orders"), nullptr);
  EXPECT_EQ(after->find_partition("payments", 0), nullptr);
  EXPECT_EQ(after->partition_count(), 0u);
  EXPECT_EQ(after->topic_count(), 0u);
  EXPECT_FALSE(after->nodes().empty()) << "brokers stay: the listeners follow them";
  EXPECT_NE(before->find_topic("orders"), nullptr) << "a reader's snapshot keeps what it had";
}

TEST(UnusedTopics, ADecidedRequestNamingATopicKeepsIt) {
  MetadataView view;
  testing::learn_standard_cluster(view);
  CompiledPolicy policy = testing::default_policy();
  const uint64_t used_at = testing::kLearnedAt + 200000;
  auto snap = view.snapshot();
  DecideContext ctx{*snap, policy, 1, used_at, true};
  decide(produce_request(9, {orders({0})}), 9, ctx);
  EXPECT_EQ(snap->find_topic("orders")->used_at_ms, used_at);
  const std::string json = view.to_json(used_at + 250);
  EXPECT_NE(json.find("\"name\":\"orders\",\"topic_id\":\"" + uuid_to_string(testing::uuid(1)) +
                      "\",\"unused_ms\":250"),
            std::string::npos)
      << "/debug/metadata says how long each topic has gone unused: " << json;

  const auto gone = view.forget_unused_topics(testing::kLearnedAt + kIdle + 1, kIdle);
  EXPECT_EQ(gone, (std::vector<std::string>{"payments"}));
  EXPECT_NE(view.snapshot()->find_partition("orders", 2), nullptr);
  EXPECT_EQ(view.snapshot()->find_topic("orders")->used_at_ms, used_at)
      << "the use time carries over to the next snapshot";
  EXPECT_EQ(view.forget_unused_topics(used_at + kIdle + 1, kIdle),
            (std::vector<std::string>{"orders"}));
}

TEST(UnusedTopics, AUseIsStampedAtMostOnceAQuarterSecond) {
  TopicEntry t;
  t.used_at_ms = 5000;
  t.mark_used(5000 + TopicEntry::kUseStampMs - 1);
  EXPECT_EQ(t.used_at_ms, 5000u) << "within the interval: no store on the shared line";
  t.mark_used(5000 + TopicEntry::kUseStampMs);
  EXPECT_EQ(t.used_at_ms, 5000u + TopicEntry::kUseStampMs);
  t.mark_used(5000);
  EXPECT_EQ(t.used_at_ms, 5000u + TopicEntry::kUseStampMs)
      << "an older clock reading never moves it back";
}

TEST(UnusedTopics, ATopicInConstantUseIsKeptAtTheShortestIdleTime) {
  // The shortest topic_idle_ms the loader takes (1000): a request every
  // 100 ms keeps the stamp within kUseStampMs of now.
  MetadataView view;
  testing::learn_standard_cluster(view);
  CompiledPolicy policy = testing::default_policy();
  ASSERT_EQ(view.forget_unused_topics(5000, 1000), (std::vector<std::string>{"orders", "payments"}));
  testing::learn_standard_cluster(view, 5000);
  for (uint64_t t = 5000; t <= 20000; t += 100) {
    auto snap = view.snapshot();
    DecideContext ctx{*snap, policy, 1, t, true};
    decide(produce_request(9, {orders({0})}), 9, ctx);
    const auto gone = view.forget_unused_topics(t, 1000);
    if (t < 6001) {
      ASSERT_TRUE(gone.empty()) << t;
    } else if (t < 6101) {
      ASSERT_EQ(gone, std::vector<std::string>{"payments"}) << t;
    } else {
      ASSERT_TRUE(gone.empty()) << "orders is in use: " << t;
    }
  }
}

TEST(UnusedTopics, AForgottenTopicLearnedAgainStartsANewIdleInterval) {
  MetadataView view;
  testing::learn_standard_cluster(view);
  const uint64_t later = testing::kLearnedAt + kIdle + 1;
  ASSERT_EQ(view.forget_unused_topics(later, kIdle).size(), 2u);
  testing::learn_standard_cluster(view, later);
  const TopicEntry* t = view.snapshot()->find_topic("orders");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->used_at_ms, later);
  EXPECT_EQ(t->partition(1)->leader_epoch, 7) << "learned afresh from the report";
  EXPECT_TRUE(view.forget_unused_topics(later + kIdle, kIdle).empty());
}

}  // namespace
}  // namespace epochgate::policy
