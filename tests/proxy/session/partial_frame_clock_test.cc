// PartialFrameClock: limits.partial_frame_timeout_ms counts the time a client
// keeps a frame incomplete, less the time epochgate held its reads for the
// broker.
#include "proxy/session/partial_frame_clock.h"

#include <gtest/gtest.h>

namespace epochgate::proxy {
namespace {

constexpr uint64_t kMs = 1000000;

TEST(PartialFrameClock, AFrameIncompletePastTheLimitIsStalled) {
  PartialFrameClock c;
  EXPECT_FALSE(c.stalled(100 * kMs, 10 * kMs)) << "no frame pending";
  c.frame_started(1 * kMs);
  c.frame_started(5 * kMs);  // more bytes of the same frame: the clock keeps its start
  EXPECT_FALSE(c.stalled(11 * kMs, 10 * kMs));
  EXPECT_TRUE(c.stalled(12 * kMs, 10 * kMs));
  c.frame_done();
  EXPECT_FALSE(c.stalled(100 * kMs, 10 * kMs));
}

TEST(PartialFrameClock, TimeHeldForTheBrokerDoesNotCount) {
  PartialFrameClock c;
  c.frame_started(1 * kMs);
  c.hold(5 * kMs);
  EXPECT_FALSE(c.stalled(500 * kMs, 10 * kMs)) << "never stalled while held";
  c.release(505 * kMs);  // 500 ms held
  EXPECT_FALSE(c.stalled(510 * kMs, 10 * kMs)) << "9 ms of the client's own time";
  EXPECT_TRUE(c.stalled(512 * kMs, 10 * kMs));
}

TEST(PartialFrameClock, AHoldBeforeTheFrameStartedCountsFromTheStart) {
  PartialFrameClock c;
  c.hold(1 * kMs);
  c.frame_started(50 * kMs);  // read from the buffer while the reads were held
  c.release(100 * kMs);       // 50 ms of the frame's time held
  EXPECT_FALSE(c.stalled(109 * kMs, 10 * kMs));
  EXPECT_TRUE(c.stalled(111 * kMs, 10 * kMs));
}

TEST(PartialFrameClock, ANewFrameForgetsThePreviousOnesHolds) {
  PartialFrameClock c;
  c.frame_started(1 * kMs);
  c.hold(2 * kMs);
  c.release(102 * kMs);
  c.frame_done();
  c.frame_started(200 * kMs);
  EXPECT_TRUE(c.stalled(211 * kMs, 10 * kMs));
}

TEST(PartialFrameClock, AFrameStartedAndDoneWhileHeldCountsOnlyItsOwnHeldTime) {
  PartialFrameClock c;
  c.hold(1 * kMs);
  c.frame_started(10 * kMs);
  c.frame_done();
  c.frame_started(20 * kMs);  // the next frame, still held
  c.release(70 * kMs);        // 50 ms of its time held
  EXPECT_FALSE(c.stalled(79 * kMs, 10 * kMs));
  EXPECT_TRUE(c.stalled(81 * kMs, 10 * kMs));
}

}  // namespace
}  // namespace epochgate::proxy
