// tests/policy/reroute_order_wait_test.cc: the waits a session applies before
// a Produce request on a rerouting topic goes (RerouteOrderGuard::must_wait,
// reroute_must_wait, park), walked through what old clients do around a
// leader move: kafka-python's next write reaching the old leader's listener
// while earlier ones are still there, a client that moved by itself writing
// to the new leader while its earlier write is still being answered by the
// old one, and the bound on parked writes.
#include <gtest/gtest.h>

#include "policy/reroute_order_guard.h"

namespace epochgate::policy {
namespace {

constexpr int32_t kOld = 1;
constexpr int32_t kNew = 2;
constexpr int32_t kNewer = 3;

StreamKey plain(int32_t partition = 0) { return StreamKey{-1, "127.0.0.1|app", "orders", partition}; }

TEST(RerouteOrderWait, RerouteWaitsBehindAnEarlierWriteOnTheOldPathInsteadOfFallingBack) {
  RerouteOrderGuard g(16);
  const StreamKey s = plain();
  const Ticket a = g.arrive();
  g.forward(a, s, kOld);
  // The view learns the move; B reaches the old leader's listener while A
  // is still there: B waits (parked) instead of falling back.
  const Ticket b = g.arrive();
  EXPECT_EQ(g.reroute_must_wait(b, s, kNew), OrderWait::kClientPath);
  ASSERT_EQ(g.park(b, s), RerouteRefusal::kNone);
  EXPECT_EQ(g.held(), 1u);
  EXPECT_EQ(g.in_flight(), 1u);
  // A comes back NOT_LEADER_OR_FOLLOWER and is rerouted itself (B is later).
  EXPECT_EQ(g.reroute_answered_direct(a, s, kNew), RerouteRefusal::kNone);
  // Now B may follow A on the same connection to the same leader.
  EXPECT_EQ(g.reroute_must_wait(b, s, kNew), OrderWait::kNone);
  g.unpark(b, s);
  EXPECT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kNone);
  EXPECT_EQ(g.held(), 0u);
  EXPECT_EQ(g.in_flight(), 2u);
  g.reroute_answered(a, s);
  g.reroute_answered(b, s);
  EXPECT_EQ(g.streams(), 0u);
}

TEST(RerouteOrderWait, RerouteToAnotherLeaderWaitsForTheEarlierReroute) {
  RerouteOrderGuard g(16);
  const StreamKey s = plain();
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  // The leader moved again: B's reroute goes on another connection, which
  // has no order with A's.
  const Ticket b = g.arrive();
  EXPECT_EQ(g.reroute_must_wait(b, s, kNewer), OrderWait::kRerouted);
  EXPECT_EQ(g.reroute_must_wait(b, s, kNew), OrderWait::kNone);
  g.reroute_answered(a, s);
  EXPECT_EQ(g.reroute_must_wait(b, s, kNewer), OrderWait::kNone);
}

TEST(RerouteOrderWait, DirectWriteToTheNewLeaderWaitsWhileAnEarlierOneIsAtTheOldLeader) {
  RerouteOrderGuard g(16);
  const StreamKey s = plain();
  const Ticket a = g.arrive();
  g.forward(a, s, kOld);
  // The client refreshed its metadata and sends B to the new leader while
  // A's answer (to be rerouted) is not in yet.
  const Ticket b = g.next_ticket();
  EXPECT_EQ(g.must_wait(b, s, kNew), OrderWait::kClientPath);
  // To the old leader it would not wait: the broker keeps that order.
  EXPECT_EQ(g.must_wait(b, s, kOld), OrderWait::kNone);
  EXPECT_EQ(g.reroute_answered_direct(a, s, kNew), RerouteRefusal::kNone);
  EXPECT_EQ(g.must_wait(b, s, kNew), OrderWait::kRerouted);
  g.reroute_answered(a, s);
  EXPECT_EQ(g.must_wait(b, s, kNew), OrderWait::kNone);
}

TEST(RerouteOrderWait, AnAnsweredLaterDirectWriteStillForbidsTheEarlierOnesReroute) {
  RerouteOrderGuard g(16);
  const StreamKey s = plain();
  const Ticket a = g.arrive();
  g.forward(a, s, kOld);
  // B stopped waiting (reroute.max_hold_ms) and went to the new leader,
  // which stored it and answered before A's NOT_LEADER_OR_FOLLOWER came.
  const Ticket b = g.arrive();
  g.forward(b, s, kNew);
  g.direct_answered(b, s);
  // A rerouted now would be stored after B.
  EXPECT_EQ(g.reroute_answered_direct(a, s, kNew), RerouteRefusal::kLaterInFlight);
}

TEST(RerouteOrderWait, ParkedWritesCountAgainstTheBoundAndLaterWritesWaitBehindThem) {
  RerouteOrderGuard g(2);
  const StreamKey s = plain(), other = plain(1);
  const Ticket a = g.arrive();
  g.forward(a, s, kOld);
  const Ticket b = g.arrive();
  ASSERT_EQ(g.park(b, s), RerouteRefusal::kNone);
  EXPECT_EQ(g.park(b, s), RerouteRefusal::kNone);  // parking twice is once
  // Another connection's later write of the stream waits behind B.
  const Ticket c = g.arrive();
  EXPECT_EQ(g.reroute_must_wait(c, s, kNew), OrderWait::kClientPath);
  EXPECT_EQ(g.must_wait(c, s, kOld), OrderWait::kClientPath);
  ASSERT_EQ(g.park(c, s), RerouteRefusal::kNone);
  // No room for a third.
  EXPECT_EQ(g.park(g.arrive(), other), RerouteRefusal::kHoldFull);
  EXPECT_EQ(g.counters().hold_full, 1u);
  // Unable to wait, a reroute after a parked write is refused by name.
  EXPECT_EQ(g.begin_reroute(g.arrive(), other, kNew), RerouteRefusal::kMaxInFlight);
  g.unpark(b, s);
  g.unpark(c, s);
  EXPECT_EQ(g.in_flight(), 0u);
  EXPECT_EQ(g.held(), 0u);
}

TEST(RerouteOrderWait, PipelinedWritesToTheOldLeaderAreReroutedInOrder) {
  RerouteOrderGuard g(16);
  const StreamKey s = plain();
  const Ticket a = g.arrive(), b = g.arrive();
  g.forward(a, s, kOld);
  g.forward(b, s, kOld);
  // A's NOT_LEADER_OR_FOLLOWER comes back while B is still at the old
  // leader: B will be refused the same way and follow A.
  bool later_pending = false;
  EXPECT_EQ(g.reroute_answered_direct(a, s, kNew, &later_pending), RerouteRefusal::kNone);
  EXPECT_TRUE(later_pending);
  EXPECT_EQ(g.reroute_answered_direct(b, s, kNew, &later_pending), RerouteRefusal::kNone);
  EXPECT_FALSE(later_pending);
  // A later write to another broker still refuses: it may be stored first.
  const Ticket c = g.arrive(), d = g.arrive();
  EXPECT_EQ(g.must_wait(c, s, kOld), OrderWait::kRerouted);  // behind A and B's reroutes
  ASSERT_EQ(g.park(c, s), RerouteRefusal::kNone);
  g.reroute_answered(a, s);
  g.reroute_answered(b, s);
  EXPECT_EQ(g.must_wait(c, s, kOld), OrderWait::kNone);
  g.unpark(c, s);
  g.forward(c, s, kOld);
  // D, to yet another broker, waits behind C; it stopped waiting
  // (reroute.max_hold_ms) and went.
  EXPECT_EQ(g.must_wait(d, s, kNewer), OrderWait::kClientPath);
  g.forward(d, s, kNewer);
  EXPECT_EQ(g.reroute_answered_direct(c, s, kNew), RerouteRefusal::kLaterInFlight);
}

TEST(RerouteOrderWait, AStreamThatFellBackDoesNotWait) {
  RerouteOrderGuard g(16);
  const StreamKey s = plain();
  const Ticket a = g.arrive();
  g.forward(a, s, kOld);
  const Ticket b = g.arrive();
  ASSERT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kEarlierInFlight);
  // The client resends B itself: waiting would not make C reroutable.
  EXPECT_EQ(g.reroute_must_wait(g.arrive(), s, kNew), OrderWait::kNone);
}

TEST(RerouteOrderWait, HoldReasonsAreMetricLabels) {
  EXPECT_STREQ(reroute_refusal_name(RerouteRefusal::kHoldFull), "hold_full");
  EXPECT_STREQ(reroute_refusal_name(RerouteRefusal::kEarlierHeld), "earlier_held");
}

}  // namespace
}  // namespace epochgate::policy
