// tests/common/bounded_debounce_test.cc: BoundedDebounce acts on a burst
// quiet_ms after its last event, and never later than max_ms after its first,
// however often events keep coming.
#include "common/bounded_debounce.h"

#include <gtest/gtest.h>

namespace epochgate {
namespace {

TEST(BoundedDebounce, AQuietBurstIsActedOnQuietMsAfterItsLastEvent) {
  BoundedDebounce d;
  EXPECT_EQ(d.delay_ms(false, 10'000), 200u);  // the first event starts the burst
  EXPECT_EQ(d.delay_ms(true, 10'050), 200u);   // each later one restarts the wait
  EXPECT_EQ(d.delay_ms(true, 10'100), 200u);
}

TEST(BoundedDebounce, EventsThatNeverStopAreActedOnMaxMsAfterTheFirst) {
  BoundedDebounce d;
  uint64_t due = 5'000 + d.delay_ms(false, 5'000);
  // An event every 10 ms: each restart still ends by 6,000.
  for (uint64_t now = 5'010; now < 7'000 && now < due; now += 10) due = now + d.delay_ms(true, now);
  EXPECT_EQ(due, 6'000u);
  // Past the ceiling an event asks for no wait at all.
  EXPECT_EQ(d.delay_ms(true, 6'000), 0u);
  EXPECT_EQ(d.delay_ms(true, 6'500), 0u);
}

TEST(BoundedDebounce, AFiredTimerStartsANewBurst) {
  BoundedDebounce d;
  d.delay_ms(false, 1'000);
  d.delay_ms(true, 1'900);
  EXPECT_EQ(d.delay_ms(false, 3'000), 200u);  // fired in between: a fresh burst
  EXPECT_EQ(d.burst_started_ms, 3'000u);
}

}  // namespace
}  // namespace epochgate
