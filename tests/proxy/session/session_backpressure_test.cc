// tests/proxy/session/session_backpressure_test.cc: watermark backpressure in both
// directions, seen from the sockets: while the broker side cannot take more
// (output over limits.high_watermark_bytes) the session stops reading the
// client, and reads again once that output drained to the low watermark;
// likewise it stops reading the broker while the client is slow.
#include <gtest/gtest.h>

#include <string>

#include "proxy/net/clock.h"
#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

config::Config small_watermarks() {
  config::Config cfg;
  cfg.limits.low_watermark_bytes = 1000;
  cfg.limits.high_watermark_bytes = 4000;
  return cfg;
}

TEST(SessionBackpressure, ClientReadsPauseWhileTheBrokerSideIsFull) {
  SessionRig rig(small_watermarks());
  rig.connect();
  rig.broker->set_try_write_limit(0);  // the broker's socket takes nothing at once
  rig.broker->set_auto_complete(false);
  std::string big;
  for (int32_t c = 1; c <= 3; ++c) big += request_frame(kHeartbeat, 3, c, std::string(3000, 'x'));
  rig.client->peer_sends(big);
  rig.pump();
  EXPECT_FALSE(rig.client->reading()) << "the client is still read while 9000 bytes wait upstream";
  std::string later = request_frame(kHeartbeat, 3, 4);
  rig.client->peer_sends(later);
  rig.pump();
  EXPECT_FALSE(rig.client->reading());
  EXPECT_EQ(rig.broker->sent(), "");
  rig.broker->complete_write(0);  // the socket took the 9000 bytes
  rig.pump();
  EXPECT_TRUE(rig.client->reading()) << "reading did not resume once the output drained";
  rig.broker->complete_write(0);  // the request read after the resume
  EXPECT_EQ(rig.broker->sent(), big + later);
}

// limits.partial_frame_timeout_ms is for clients that stop sending; a frame
// left incomplete because epochgate stopped reading for the broker is not one.
TEST(SessionBackpressure, APartialFrameHeldForTheBrokerIsNotStalled) {
  SessionRig rig(small_watermarks());
  rig.connect();
  rig.broker->set_try_write_limit(0);
  rig.broker->set_auto_complete(false);
  std::string big;
  for (int32_t c = 1; c <= 3; ++c) big += request_frame(kHeartbeat, 3, c, std::string(3000, 'x'));
  const std::string next = request_frame(kHeartbeat, 3, 4, std::string(100, 'y'));
  rig.client->peer_sends(big + next.substr(0, 50));
  rig.pump();
  ASSERT_FALSE(rig.client->reading());
  constexpr uint64_t kLimit = 1000000000;  // 1 s
  EXPECT_FALSE(rig.session().partial_frame_stalled(now_ns() + 10 * kLimit, kLimit))
      << "the broker's wait was counted against the client";
  rig.broker->complete_write(0);
  rig.pump();
  ASSERT_TRUE(rig.client->reading());
  EXPECT_FALSE(rig.session().partial_frame_stalled(now_ns() + kLimit / 2, kLimit));
  EXPECT_TRUE(rig.session().partial_frame_stalled(now_ns() + 2 * kLimit, kLimit))
      << "once read again, the client's own time counts";
  rig.client->peer_sends(next.substr(50));
  rig.pump();
  rig.broker->complete_write(0);
  EXPECT_FALSE(rig.session().partial_frame_stalled(now_ns() + 2 * kLimit, kLimit));
  EXPECT_EQ(rig.broker->sent(), big + next);
}

TEST(SessionBackpressure, BrokerReadsPauseWhileTheClientIsSlow) {
  SessionRig rig(small_watermarks());
  rig.connect();
  rig.client->set_try_write_limit(0);
  rig.client->set_auto_complete(false);
  std::string requests, answers;
  for (int32_t c = 1; c <= 3; ++c) {
    requests += request_frame(kHeartbeat, 3, c);
    answers += response_frame(c, std::string(3000, 'r'));
  }
  rig.client->peer_sends(requests);
  rig.pump();
  rig.broker->peer_sends(answers);
  rig.pump();
  EXPECT_FALSE(rig.broker->reading()) << "the broker is still read while the client is slow";
  rig.client->complete_write(0);
  rig.pump();
  rig.client->complete_write(0);
  rig.pump();
  EXPECT_TRUE(rig.broker->reading());
  EXPECT_EQ(rig.client->sent(), answers);
}

// A client whose first request arrives while the budget is exceeded and the
// upstream is still being dialled holds that request unread; once the
// session is open it must be registered as waiting for the budget, so the
// worker's re-check forwards the request when the budget frees.
TEST(SessionBackpressure, SessionStartedDuringABudgetPauseResumesWhenItFrees) {
  BufferBudget budget(1u << 20);
  others_hold_more_than(budget);
  {
    SessionRig rig(config::Config{}, nullptr, &budget);
    const std::string request = request_frame(kHeartbeat, 3, 7);
    rig.client->peer_sends(request);
    rig.pump();
    rig.connect();
    rig.pump();
    EXPECT_EQ(rig.broker->sent(), "") << "forwarded while over the budget";
    EXPECT_TRUE(rig.session().budget_paused()) << "not registered for the budget's re-check";
    EXPECT_GE(rig.budget_rechecks, 1);
    budget.add(-(2 << 20));
    rig.session().recheck_budget();  // what the worker's budget timer does
    rig.pump();
    EXPECT_EQ(rig.broker->sent(), request);
  }
}

TEST(SessionBackpressure, ALightClientReadsWhileHeavyOnesHoldTheBudget) {
  BufferBudget budget(1u << 20);
  budget.join();  // three heavy members hold more than the whole budget
  budget.join();
  budget.join();
  budget.add(3u << 20);
  {
    SessionRig rig(config::Config{}, nullptr, &budget);
    rig.connect();
    const std::string request = request_frame(kHeartbeat, 3, 8);
    rig.client->peer_sends(request);
    rig.pump();
    EXPECT_EQ(rig.broker->sent(), request) << "a client under its fair share was paused";
    EXPECT_TRUE(rig.client->reading());
  }
  budget.add(-(3 << 20));
}

}  // namespace
}  // namespace epochgate::proxy::testing
