// tests/policy/reroute_order_guard_test.cc: the order rules of rerouting
// (policy/reroute_order_guard.h), walked through the moves a producer makes
// around a leader move: a write rerouted by epochgate while the client, after
// its own metadata refresh, sends the next write straight to the new leader
// (the order hazard, provoked on purpose), pipelined writes on the old path,
// fall-backs the client will resend, writes parked behind reroutes, and the
// bound.
#include <gtest/gtest.h>

#include <string>

#include "policy/reroute_order_guard.h"

namespace epochgate::policy {
namespace {

constexpr int32_t kOld = 1;  // the broker that lost leadership
constexpr int32_t kNew = 2;  // the true leader

StreamKey idempotent(int64_t pid, int32_t partition = 0) {
  return StreamKey{pid, "", "orders", partition};
}

TEST(RerouteOrderGuard, DirectWriteToNewLeaderWaitsForItsReroutedPredecessor) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  // A goes to the old leader, which answers NOT_LEADER_OR_FOLLOWER.
  const Ticket a = g.arrive();
  g.forward(a, s, kOld);
  g.direct_answered(a, s);
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  // Before A's answer, the client sends B straight to the new leader: its
  // session keeps it (parked) until A is answered.
  const Ticket b = g.arrive();
  EXPECT_EQ(g.must_wait(b, s, kNew), OrderWait::kRerouted);
  ASSERT_EQ(g.park(b, s), RerouteRefusal::kNone);
  EXPECT_EQ(g.held(), 1u);
  EXPECT_EQ(g.counters().held, 1u);
  // A's answer arrives: B may go now, and is on the client's path.
  g.reroute_answered(a, s);
  EXPECT_EQ(g.must_wait(b, s, kNew), OrderWait::kNone);
  g.unpark(b, s);
  g.forward(b, s, kNew);
  EXPECT_EQ(g.held(), 0u);
  EXPECT_EQ(g.in_flight(), 0u);
  // B now counts as in flight on the client's path: a later write of the
  // stream may not be rerouted past it.
  const Ticket c = g.arrive();
  EXPECT_EQ(g.may_reroute(c, s), RerouteRefusal::kEarlierInFlight);
  g.direct_answered(b, s);
  EXPECT_EQ(g.streams(), 0u);
}

TEST(RerouteOrderGuard, ParkedWritesWaitForEveryEarlierRerouteThenGoInArrivalOrder) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);  // epochgate's own decision
  const Ticket b = g.arrive();
  ASSERT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kNone);  // rerouted after A
  const Ticket c = g.arrive();
  const Ticket d = g.arrive();
  EXPECT_EQ(g.must_wait(c, s, kNew), OrderWait::kRerouted);
  ASSERT_EQ(g.park(c, s), RerouteRefusal::kNone);
  ASSERT_EQ(g.park(d, s), RerouteRefusal::kNone);
  // B answered before A (another connection could be faster): nothing goes yet.
  g.reroute_answered(b, s);
  EXPECT_EQ(g.must_wait(c, s, kNew), OrderWait::kRerouted);
  EXPECT_EQ(g.must_wait(d, s, kNew), OrderWait::kRerouted);
  g.reroute_answered(a, s);
  // C first; D waits behind the parked C until C has gone.
  EXPECT_EQ(g.must_wait(c, s, kNew), OrderWait::kNone);
  EXPECT_EQ(g.must_wait(d, s, kNew), OrderWait::kClientPath);
  g.unpark(c, s);
  g.forward(c, s, kNew);
  EXPECT_EQ(g.must_wait(d, s, kNew), OrderWait::kNone);  // same broker: it keeps the order
}

// A rerouted write the new leader refused (it had not taken over yet) must
// not be sent to it again once a later write of its stream went there
// behind it: the leader may have taken over in between and stored the later
// one, and the resend would land after it (librdkafka 2.15.1 took the
// resulting OUT_OF_ORDER_SEQUENCE_NUMBER as fatal on a real move).
TEST(RerouteOrderGuard, LaterRerouteToTheSameLeaderIsVisibleToAnEarlierOne) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const StreamKey other = idempotent(4001);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  EXPECT_FALSE(g.later_rerouted_to(a, s, kNew));  // alone: a resend keeps the order
  const Ticket b = g.arrive();
  ASSERT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kNone);
  EXPECT_TRUE(g.later_rerouted_to(a, s, kNew));
  EXPECT_FALSE(g.later_rerouted_to(b, s, kNew));  // nothing behind the last one
  EXPECT_FALSE(g.later_rerouted_to(a, s, kOld));  // another leader's connection
  EXPECT_FALSE(g.later_rerouted_to(a, other, kNew));  // another producer
  // Once B is answered it no longer stands behind A.
  g.reroute_answered(b, s);
  EXPECT_FALSE(g.later_rerouted_to(a, s, kNew));
  g.reroute_answered(a, s);
  EXPECT_EQ(g.streams(), 0u);
}

TEST(RerouteOrderGuard, RerouteAfterAHeldWriteIsRefused) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  const Ticket b = g.arrive();
  ASSERT_EQ(g.park(b, s), RerouteRefusal::kNone);  // its session keeps it behind A
  // C reaches the old leader after B: rerouted now it would pass B.
  const Ticket c = g.arrive();
  EXPECT_EQ(g.begin_reroute(c, s, kNew), RerouteRefusal::kEarlierHeld);
  EXPECT_EQ(g.counters().refused[static_cast<size_t>(RerouteRefusal::kEarlierHeld)], 1u);
}

TEST(RerouteOrderGuard, NeverRerouteWhileAnEarlierWriteIsOnTheOldPath) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();
  g.forward(a, s, kOld);
  // The view learns the move; B reaches the old leader's listener.
  const Ticket b = g.arrive();
  EXPECT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kEarlierInFlight);
  // A comes back NOT_LEADER_OR_FOLLOWER: the client resends A and B itself,
  // so A may not be rerouted either (B would then be behind A's reroute on
  // the client's resend, or A ahead of nothing: either way the client owns it).
  g.direct_answered(a, s);
  EXPECT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kStreamFellBack);
  // The client moves: its resend of A reaches the new leader directly.
  const Ticket a2 = g.arrive();
  g.forward(a2, s, kNew);
  g.direct_answered(a2, s);
  const Ticket c = g.arrive();
  EXPECT_EQ(g.begin_reroute(c, s, kNew), RerouteRefusal::kNone);
  g.reroute_answered(c, s);
  EXPECT_EQ(g.streams(), 0u);
  EXPECT_EQ(g.in_flight(), 0u);
}

TEST(RerouteOrderGuard, PipelinedWritesOnTheOldPathAllFallBack) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();
  const Ticket b = g.arrive();
  g.forward(a, s, kOld);
  g.forward(b, s, kOld);
  // A's NOT_LEADER arrives while B is still at the old leader.
  g.direct_answered(a, s);
  EXPECT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kLaterInFlight);
  // B's NOT_LEADER: nothing is in flight any more, but the client will
  // resend A first; B rerouted now would reach the new leader before A.
  g.direct_answered(b, s);
  EXPECT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kStreamFellBack);
  // Writing to the old leader again is not moving.
  const Ticket c = g.arrive();
  g.forward(c, s, kOld);
  g.direct_answered(c, s);
  EXPECT_EQ(g.begin_reroute(c, s, kNew), RerouteRefusal::kStreamFellBack);
}

TEST(RerouteOrderGuard, StreamsAreIndependent) {
  RerouteOrderGuard g(16);
  const StreamKey p7 = idempotent(7), p8 = idempotent(8), p7_part1 = idempotent(7, 1);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, p7, kNew), RerouteRefusal::kNone);
  EXPECT_EQ(g.must_wait(g.next_ticket(), p8, kNew), OrderWait::kNone);
  EXPECT_EQ(g.must_wait(g.next_ticket(), p7_part1, kNew), OrderWait::kNone);
  // Idempotent producers are told apart by producer id, not by client.
  StreamKey same_pid = p7;
  same_pid.client = "another connection";
  EXPECT_EQ(g.must_wait(g.next_ticket(), same_pid, kNew), OrderWait::kRerouted);
  // Non-idempotent ones by client.
  StreamKey plain_a{-1, "10.0.0.1 app", "orders", 0}, plain_b{-1, "10.0.0.2 app", "orders", 0};
  const Ticket x = g.arrive();
  ASSERT_EQ(g.begin_reroute(x, plain_a, kNew), RerouteRefusal::kNone);
  EXPECT_EQ(g.must_wait(g.next_ticket(), plain_b, kNew), OrderWait::kNone);
  EXPECT_EQ(g.must_wait(g.next_ticket(), plain_a, kNew), OrderWait::kRerouted);
}

TEST(RerouteOrderGuard, BoundCoversReroutesAndParkedWrites) {
  RerouteOrderGuard g(2);
  const StreamKey s1 = idempotent(1), s2 = idempotent(2), s3 = idempotent(3);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s1, kNew), RerouteRefusal::kNone);
  const Ticket b = g.arrive();
  ASSERT_EQ(g.park(b, s1), RerouteRefusal::kNone);
  EXPECT_EQ(g.in_flight(), 2u);
  EXPECT_EQ(g.begin_reroute(g.arrive(), s2, kNew), RerouteRefusal::kMaxInFlight);
  // A write that must wait but finds no room is refused, not let go out of order.
  const Ticket late = g.arrive();
  EXPECT_EQ(g.must_wait(late, s1, kNew), OrderWait::kRerouted);
  EXPECT_EQ(g.park(late, s1), RerouteRefusal::kHoldFull);
  EXPECT_EQ(g.counters().hold_full, 1u);
  // A write of another stream with nothing to wait for still goes.
  EXPECT_EQ(g.must_wait(g.next_ticket(), s3, kNew), OrderWait::kNone);
  g.reroute_answered(a, s1);
  g.unpark(b, s1);
  EXPECT_EQ(g.in_flight(), 0u);
  // s2's refused write is the client's to resend: s2 falls back until then.
  EXPECT_EQ(g.fell_back_streams(), 1u);
  EXPECT_EQ(g.begin_reroute(g.arrive(), s2, kNew), RerouteRefusal::kStreamFellBack);
  g.direct_answered(0, s2);
  const Ticket resend = g.arrive();
  g.forward(resend, s2, kNew);
  g.direct_answered(resend, s2);
  EXPECT_EQ(g.fell_back_streams(), 0u);
  EXPECT_EQ(g.begin_reroute(g.arrive(), s2, kNew), RerouteRefusal::kNone);
}

TEST(RerouteOrderGuard, ZeroBoundRefusesEveryReroute) {
  RerouteOrderGuard g(0);
  EXPECT_EQ(g.begin_reroute(g.arrive(), idempotent(1), kNew), RerouteRefusal::kMaxInFlight);
  EXPECT_EQ(g.must_wait(g.next_ticket(), idempotent(1), kNew), OrderWait::kNone);
}

TEST(RerouteOrderGuard, UnparkedWriteFreesItsRoom) {
  RerouteOrderGuard g(4);
  const StreamKey s = idempotent(9);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  const Ticket b = g.arrive();
  const Ticket c = g.arrive();
  ASSERT_EQ(g.park(b, s), RerouteRefusal::kNone);
  ASSERT_EQ(g.park(c, s), RerouteRefusal::kNone);
  g.unpark(b, s);  // its client went away; A still unanswered
  EXPECT_EQ(g.in_flight(), 2u);
  EXPECT_EQ(g.must_wait(c, s, kNew), OrderWait::kRerouted);
  g.reroute_answered(a, s);
  EXPECT_EQ(g.must_wait(c, s, kNew), OrderWait::kNone);  // B is gone: nothing before C
  g.unpark(c, s);
  g.forward(c, s, kNew);
  g.direct_answered(c, s);
  EXPECT_EQ(g.streams(), 0u);
  EXPECT_EQ(g.in_flight(), 0u);
}

TEST(RerouteOrderGuard, AnswersForUnknownWritesChangeNothing) {
  RerouteOrderGuard g(4);
  const StreamKey s = idempotent(9);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  g.reroute_answered(a + 100, s);
  g.direct_answered(a, s);  // wrong kind: a reroute is not a direct write
  EXPECT_EQ(g.in_flight(), 1u);
  EXPECT_EQ(g.must_wait(g.next_ticket(), s, kNew), OrderWait::kRerouted);
}

TEST(RerouteOrderGuard, RefusalNamesAreTheMetricLabels) {
  EXPECT_STREQ(reroute_refusal_name(RerouteRefusal::kEarlierInFlight), "earlier_in_flight");
  EXPECT_STREQ(reroute_refusal_name(RerouteRefusal::kLaterInFlight), "later_in_flight");
  EXPECT_STREQ(reroute_refusal_name(RerouteRefusal::kEarlierHeld), "earlier_held");
  EXPECT_STREQ(reroute_refusal_name(RerouteRefusal::kStreamFellBack), "stream_fell_back");
  EXPECT_STREQ(reroute_refusal_name(RerouteRefusal::kMaxInFlight), "max_in_flight");
}

}  // namespace
}  // namespace epochgate::policy
