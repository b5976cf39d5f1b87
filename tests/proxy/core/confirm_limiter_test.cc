// tests/proxy/core/confirm_limiter_test.cc: which confirmations of an epoch-less
// move report may skip the urgent refresh interval.
#include "proxy/core/confirm_limiter.h"

#include <gtest/gtest.h>

namespace epochgate::proxy {
namespace {

constexpr uint64_t kInterval = 100;

TEST(ConfirmLimiter, ATopicIsConfirmedAtOnceOncePerInterval) {
  ConfirmLimiter l;
  EXPECT_TRUE(l.admit_topic("t", 1000, kInterval));
  EXPECT_FALSE(l.admit_topic("t", 1001, kInterval));
  EXPECT_FALSE(l.admit_topic("t", 1099, kInterval));
  EXPECT_TRUE(l.admit_topic("t", 1100, kInterval));
  // Another topic has its own turn.
  EXPECT_TRUE(l.admit_topic("u", 1101, kInterval));
}

TEST(ConfirmLimiter, RefreshesSkippingTheIntervalAreBoundedWhateverTheTopics) {
  ConfirmLimiter l;
  for (size_t i = 0; i < ConfirmLimiter::kBurst; ++i) EXPECT_TRUE(l.admit_refresh(1000 + i, kInterval));
  EXPECT_FALSE(l.admit_refresh(1050, kInterval));
  EXPECT_FALSE(l.admit_refresh(1099, kInterval));
  // The first one left the window.
  EXPECT_TRUE(l.admit_refresh(1100, kInterval));
  EXPECT_FALSE(l.admit_refresh(1100, kInterval));
}

TEST(ConfirmLimiter, TopicTableStaysBounded) {
  ConfirmLimiter l;
  for (size_t i = 0; i < ConfirmLimiter::kMaxTopics; ++i)
    EXPECT_TRUE(l.admit_topic("t" + std::to_string(i), 1000, kInterval));
  // Full of topics confirmed inside the interval: a new one waits.
  EXPECT_FALSE(l.admit_topic("new", 1050, kInterval));
  EXPECT_EQ(l.topics(), ConfirmLimiter::kMaxTopics);
  // Once they are older than the interval, they make room.
  EXPECT_TRUE(l.admit_topic("new", 1100, kInterval));
  EXPECT_EQ(l.topics(), 1u);
}

TEST(ConfirmLimiter, ZeroIntervalAdmitsEverything) {
  ConfirmLimiter l;
  EXPECT_TRUE(l.admit_topic("t", 5, 0));
  EXPECT_TRUE(l.admit_topic("t", 5, 0));
}

}  // namespace
}  // namespace epochgate::proxy
