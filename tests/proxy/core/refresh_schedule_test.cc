// tests/proxy/core/refresh_schedule_test.cc: when the Metadata refresher's
// next refresh is due, and that a timer armed for next_ms() neither misses a
// refresh nor wakes the loop for nothing.
#include "proxy/core/refresh_schedule.h"

#include <gtest/gtest.h>

#include <random>

namespace epochgate::proxy {
namespace {

using Due = RefreshSchedule::Due;

constexpr uint64_t kInterval = 30000;
constexpr uint64_t kUrgentMin = 1000;

/// A refresher whose view loaded at 10 s and whose last refresh (a periodic
/// one) answered then.
RefreshSchedule loaded_at_10s() {
  RefreshSchedule s;
  s.startup_done = true;
  s.last_full_refresh_ms = 10000;
  s.last_refresh_ms = 10000;
  s.periodic_ms = kInterval;
  s.urgent_min_interval_ms = kUrgentMin;
  return s;
}

bool starts(Due d) { return d == Due::kStartup || d == Due::kPeriodic || d == Due::kUrgent; }

TEST(RefreshSchedule, TheStartupRefreshIsDueAtOnce) {
  RefreshSchedule s;
  s.periodic_ms = kInterval;
  EXPECT_EQ(s.next_ms(), 0u);
  EXPECT_EQ(s.due(5), Due::kStartup);
}

TEST(RefreshSchedule, APeriodicRefreshIsDueAtItsIntervalAndNotBefore) {
  RefreshSchedule s = loaded_at_10s();
  EXPECT_EQ(s.next_ms(), 10000 + kInterval);
  EXPECT_EQ(s.due(10001), Due::kNothing);
  EXPECT_EQ(s.due(10000 + kInterval - 1), Due::kNothing);
  EXPECT_EQ(s.due(10000 + kInterval), Due::kPeriodic);
  // The jitter moves it with the interval the refresher drew.
  s.periodic_ms = kInterval * 9 / 10;
  EXPECT_EQ(s.next_ms(), 10000 + kInterval * 9 / 10);
}

TEST(RefreshSchedule, AnUrgentRequestAfterTheRateLimitIsDueAtOnce) {
  RefreshSchedule s = loaded_at_10s();
  s.urgent = true;
  const uint64_t now = 10000 + kUrgentMin + 500;
  EXPECT_LE(s.next_ms(), now);
  EXPECT_EQ(s.due(now), Due::kUrgent);
}

TEST(RefreshSchedule, AnUrgentRequestWaitsOutTheRateLimitThenIsDue) {
  RefreshSchedule s = loaded_at_10s();
  s.urgent = true;
  EXPECT_EQ(s.due(10200), Due::kUrgentWaits);  // a confirmation may still go now
  EXPECT_EQ(s.next_ms(), 10000 + kUrgentMin);
  EXPECT_EQ(s.due(10000 + kUrgentMin - 1), Due::kUrgentWaits);
  EXPECT_EQ(s.due(10000 + kUrgentMin), Due::kUrgent);
}

TEST(RefreshSchedule, UrgentRefreshesOfAFewTopicsDoNotPutOffThePeriodicOne) {
  RefreshSchedule s = loaded_at_10s();
  // Urgent refreshes answered since; the periodic clock stays at 10 s.
  s.last_refresh_ms = 10000 + kInterval - 100;
  s.urgent = true;
  EXPECT_EQ(s.next_ms(), 10000 + kInterval);
  EXPECT_EQ(s.due(10000 + kInterval), Due::kPeriodic);
}

TEST(RefreshSchedule, NothingIsDueWhileARefreshIsInFlight) {
  RefreshSchedule s = loaded_at_10s();
  s.urgent = true;
  s.awaiting = true;
  EXPECT_EQ(s.next_ms(), RefreshSchedule::kNever);
  EXPECT_EQ(s.due(10000 + 10 * kInterval), Due::kNothing);
}

TEST(RefreshSchedule, AFailedRoundHoldsBackEveryRefreshUntilItsBackoffEnds) {
  RefreshSchedule s = loaded_at_10s();
  s.urgent = true;  // a failed round leaves its refresh pending
  s.last_failed_ms = 10000 + kInterval + 50;
  s.retry_delay_ms = 4000;
  const uint64_t ends = s.last_failed_ms + 4000;
  EXPECT_EQ(s.next_ms(), ends);
  EXPECT_EQ(s.due(ends - 1), Due::kNothing);
  EXPECT_EQ(s.due(ends), Due::kPeriodic);
  // Before the first load, the startup refresh retries the same way.
  RefreshSchedule first;
  first.last_failed_ms = 2000;
  first.retry_delay_ms = 1000;
  EXPECT_EQ(first.next_ms(), 3000u);
  EXPECT_EQ(first.due(2999), Due::kNothing);
  EXPECT_EQ(first.due(3000), Due::kStartup);
}

TEST(RefreshSchedule, AReloadedIntervalMovesTheNextRefreshBothWays) {
  RefreshSchedule s = loaded_at_10s();
  s.periodic_ms = 60000;
  EXPECT_EQ(s.next_ms(), 70000u);
  EXPECT_EQ(s.due(10000 + kInterval), Due::kNothing);
  // Shorter than the time already waited: due at once, not lost.
  s.periodic_ms = 5000;
  EXPECT_LE(s.next_ms(), 20000u);
  EXPECT_EQ(s.due(20000), Due::kPeriodic);
  // A shorter urgent rate limit lets a waiting urgent refresh go sooner.
  s.periodic_ms = kInterval;
  s.urgent = true;
  s.urgent_min_interval_ms = 100;
  EXPECT_EQ(s.next_ms(), 10100u);
  EXPECT_EQ(s.due(10100), Due::kUrgent);
}

// For any state: nothing starts before next_ms(), and something starts at
// it, so a one-shot timer armed for next_ms() is exactly as prompt as the
// fixed tick was, without the wake-ups in between.
TEST(RefreshSchedule, NextIsTheFirstMomentARefreshStarts) {
  std::mt19937_64 rng(7);
  auto pick = [&](uint64_t hi) { return std::uniform_int_distribution<uint64_t>(0, hi)(rng); };
  for (int i = 0; i < 20000; ++i) {
    RefreshSchedule s;
    s.awaiting = pick(7) == 0;
    s.startup_done = pick(5) != 0;
    s.last_full_refresh_ms = s.startup_done ? 1 + pick(100000) : 0;
    s.last_refresh_ms = s.startup_done ? s.last_full_refresh_ms + pick(50000) : 0;
    s.periodic_ms = 1 + pick(60000);
    s.urgent = pick(1) == 1;
    s.urgent_min_interval_ms = pick(5000);
    if (pick(2) == 0) {
      s.last_failed_ms = std::max(s.last_refresh_ms, uint64_t{1}) + pick(1000);
      s.retry_delay_ms = 1000u << pick(5);
    }
    const uint64_t next = s.next_ms();
    const uint64_t from = std::max(s.last_refresh_ms, s.last_failed_ms);
    if (next == RefreshSchedule::kNever) {
      EXPECT_TRUE(s.awaiting);
      EXPECT_FALSE(starts(s.due(from + pick(200000))));
      continue;
    }
    // Before `next` (from the state's own last event on), nothing starts.
    for (int k = 0; k < 8 && next > from; ++k) {
      const uint64_t t = from + pick(next - from - 1);
      ASSERT_FALSE(starts(s.due(t))) << "iteration " << i << " t=" << t << " next=" << next;
    }
    const uint64_t at = std::max(next, from);
    ASSERT_TRUE(starts(s.due(at))) << "iteration " << i << " next=" << next;
    ASSERT_TRUE(starts(s.due(at + pick(100000))));
  }
}

}  // namespace
}  // namespace epochgate::proxy
