// tests/policy/reroute_order_guard_test.cc: the order rules of rerouting
// (policy/reroute_order_guard.h), walked through the moves a producer makes
// around a leader move: a write rerouted by epochgate while the client, after
// its own metadata refresh, sends the next write straight to the new leader
// (the order hazard, provoked on purpose), pipelined writes on the old path,
// fall-backs the client will resend, and the bound.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy/reroute_order_guard.h"

namespace epochgate::policy {
namespace {

constexpr int32_t kOld = 1;  // the broker that lost leadership
constexpr int32_t kNew = 2;  // the true leader

StreamKey idempotent(int64_t pid, int32_t partition = 0) {
  return StreamKey{pid, "", "orders", partition};
}

std::vector<Ticket> tickets(const std::vector<Released>& r) {
  std::vector<Ticket> out;
  for (const Released& x : r) out.push_back(x.ticket);
  return out;
}

TEST(RerouteOrderGuard, DirectWriteToNewLeaderWaitsForItsReroutedPredecessor) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  // A goes to the old leader, which answers NOT_LEADER_OR_FOLLOWER.
  const Ticket a = g.arrive();
  ASSERT_EQ(g.forward(a, s, kOld), ForwardVerdict::kForward);
  g.direct_answered(a, s);
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  // Before A's answer, the client sends B straight to the new leader.
  const Ticket b = g.arrive();
  EXPECT_EQ(g.forward(b, s, kNew), ForwardVerdict::kHold);
  EXPECT_EQ(g.held(), 1u);
  EXPECT_EQ(g.counters().held, 1u);
  // A's answer arrives: B goes now, and is on the client's path.
  EXPECT_EQ(tickets(g.reroute_answered(a, s)), std::vector<Ticket>{b});
  EXPECT_EQ(g.held(), 0u);
  EXPECT_EQ(g.in_flight(), 0u);
  EXPECT_EQ(g.counters().released, 1u);
  // B now counts as in flight on the client's path: a later write of the
  // stream may not be rerouted past it.
  const Ticket c = g.arrive();
  EXPECT_EQ(g.may_reroute(c, s), RerouteRefusal::kEarlierInFlight);
  g.direct_answered(b, s);
  EXPECT_EQ(g.streams(), 0u);
}

TEST(RerouteOrderGuard, WriteSentBeforeTheRerouteIsNotHeld) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();  // arrives first, rerouted later
  const Ticket b = g.arrive();
  ASSERT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kNone);
  // A has the earlier ticket: nothing rerouted arrived before it.
  EXPECT_EQ(g.forward(a, s, kNew), ForwardVerdict::kForward);
}

TEST(RerouteOrderGuard, HeldWritesLeaveInArrivalOrderAfterEveryEarlierReroute) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);  // epochgate's own decision
  const Ticket b = g.arrive();
  ASSERT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kNone);  // rerouted after A
  const Ticket c = g.arrive();
  const Ticket d = g.arrive();
  EXPECT_EQ(g.forward(c, s, kNew), ForwardVerdict::kHold);
  EXPECT_EQ(g.forward(d, s, kNew), ForwardVerdict::kHold);
  // B answered before A (another connection could be faster): nothing yet.
  EXPECT_TRUE(g.reroute_answered(b, s).empty());
  EXPECT_EQ(tickets(g.reroute_answered(a, s)), (std::vector<Ticket>{c, d}));
}

TEST(RerouteOrderGuard, RerouteAfterAHeldWriteIsRefused) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  const Ticket b = g.arrive();
  ASSERT_EQ(g.forward(b, s, kNew), ForwardVerdict::kHold);
  // C reaches the old leader after B: rerouted now it would pass B.
  const Ticket c = g.arrive();
  EXPECT_EQ(g.begin_reroute(c, s, kNew), RerouteRefusal::kEarlierHeld);
  EXPECT_EQ(g.counters().refused[static_cast<size_t>(RerouteRefusal::kEarlierHeld)], 1u);
}

TEST(RerouteOrderGuard, NeverRerouteWhileAnEarlierWriteIsOnTheOldPath) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.forward(a, s, kOld), ForwardVerdict::kForward);
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
  EXPECT_EQ(g.forward(a2, s, kNew), ForwardVerdict::kForward);
  g.direct_answered(a2, s);
  const Ticket c = g.arrive();
  EXPECT_EQ(g.begin_reroute(c, s, kNew), RerouteRefusal::kNone);
  EXPECT_TRUE(g.reroute_answered(c, s).empty());
  EXPECT_EQ(g.streams(), 0u);
  EXPECT_EQ(g.in_flight(), 0u);
}

TEST(RerouteOrderGuard, PipelinedWritesOnTheOldPathAllFallBack) {
  RerouteOrderGuard g(16);
  const StreamKey s = idempotent(4000);
  const Ticket a = g.arrive();
  const Ticket b = g.arrive();
  ASSERT_EQ(g.forward(a, s, kOld), ForwardVerdict::kForward);
  ASSERT_EQ(g.forward(b, s, kOld), ForwardVerdict::kForward);
  // A's NOT_LEADER arrives while B is still at the old leader.
  g.direct_answered(a, s);
  EXPECT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kLaterInFlight);
  // B's NOT_LEADER: nothing is in flight any more, but the client will
  // resend A first; B rerouted now would reach the new leader before A.
  g.direct_answered(b, s);
  EXPECT_EQ(g.begin_reroute(b, s, kNew), RerouteRefusal::kStreamFellBack);
  // Writing to the old leader again is not moving.
  const Ticket c = g.arrive();
  EXPECT_EQ(g.forward(c, s, kOld), ForwardVerdict::kForward);
  g.direct_answered(c, s);
  EXPECT_EQ(g.begin_reroute(c, s, kNew), RerouteRefusal::kStreamFellBack);
}

TEST(RerouteOrderGuard, StreamsAreIndependent) {
  RerouteOrderGuard g(16);
  const StreamKey p7 = idempotent(7), p8 = idempotent(8), p7_part1 = idempotent(7, 1);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, p7, kNew), RerouteRefusal::kNone);
  EXPECT_EQ(g.forward(g.arrive(), p8, kNew), ForwardVerdict::kForward);
  EXPECT_EQ(g.forward(g.arrive(), p7_part1, kNew), ForwardVerdict::kForward);
  // Idempotent producers are told apart by producer id, not by client.
  StreamKey same_pid = p7;
  same_pid.client = "another connection";
  EXPECT_EQ(g.forward(g.arrive(), same_pid, kNew), ForwardVerdict::kHold);
  // Non-idempotent ones by client.
  StreamKey plain_a{-1, "10.0.0.1 app", "orders", 0}, plain_b{-1, "10.0.0.2 app", "orders", 0};
  const Ticket x = g.arrive();
  ASSERT_EQ(g.begin_reroute(x, plain_a, kNew), RerouteRefusal::kNone);
  EXPECT_EQ(g.forward(g.arrive(), plain_b, kNew), ForwardVerdict::kForward);
  EXPECT_EQ(g.forward(g.arrive(), plain_a, kNew), ForwardVerdict::kHold);
}

TEST(RerouteOrderGuard, BoundCoversReroutesAndHeldWrites) {
  RerouteOrderGuard g(2);
  const StreamKey s1 = idempotent(1), s2 = idempotent(2), s3 = idempotent(3);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s1, kNew), RerouteRefusal::kNone);
  const Ticket b = g.arrive();
  ASSERT_EQ(g.forward(b, s1, kNew), ForwardVerdict::kHold);
  EXPECT_EQ(g.in_flight(), 2u);
  EXPECT_EQ(g.begin_reroute(g.arrive(), s2, kNew), RerouteRefusal::kMaxInFlight);
  // A write that must wait but finds no room is not forwarded out of order.
  EXPECT_EQ(g.forward(g.arrive(), s1, kNew), ForwardVerdict::kHoldFull);
  EXPECT_EQ(g.counters().hold_full, 1u);
  // A write of another stream with nothing to wait for still goes.
  EXPECT_EQ(g.forward(g.arrive(), s3, kNew), ForwardVerdict::kForward);
  EXPECT_EQ(tickets(g.reroute_answered(a, s1)), std::vector<Ticket>{b});
  EXPECT_EQ(g.in_flight(), 0u);
  // s2's refused write is the client's to resend: s2 falls back until then.
  EXPECT_EQ(g.fell_back_streams(), 1u);
  EXPECT_EQ(g.begin_reroute(g.arrive(), s2, kNew), RerouteRefusal::kStreamFellBack);
  g.direct_answered(0, s2);
  const Ticket resend = g.arrive();
  EXPECT_EQ(g.forward(resend, s2, kNew), ForwardVerdict::kForward);
  g.direct_answered(resend, s2);
  EXPECT_EQ(g.fell_back_streams(), 0u);
  EXPECT_EQ(g.begin_reroute(g.arrive(), s2, kNew), RerouteRefusal::kNone);
}

TEST(RerouteOrderGuard, ZeroBoundRefusesEveryReroute) {
  RerouteOrderGuard g(0);
  EXPECT_EQ(g.begin_reroute(g.arrive(), idempotent(1), kNew), RerouteRefusal::kMaxInFlight);
  EXPECT_EQ(g.forward(g.arrive(), idempotent(1), kNew), ForwardVerdict::kForward);
}

TEST(RerouteOrderGuard, DroppedHeldWriteFreesItsRoom) {
  RerouteOrderGuard g(4);
  const StreamKey s = idempotent(9);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  const Ticket b = g.arrive();
  const Ticket c = g.arrive();
  ASSERT_EQ(g.forward(b, s, kNew), ForwardVerdict::kHold);
  ASSERT_EQ(g.forward(c, s, kNew), ForwardVerdict::kHold);
  EXPECT_TRUE(g.drop_held(b, s).empty());  // its client went away; A still unanswered
  EXPECT_EQ(g.in_flight(), 2u);
  EXPECT_EQ(tickets(g.reroute_answered(a, s)), std::vector<Ticket>{c});
  g.direct_answered(c, s);
  EXPECT_EQ(g.streams(), 0u);
  EXPECT_EQ(g.in_flight(), 0u);
}

TEST(RerouteOrderGuard, AnswersForUnknownWritesChangeNothing) {
  RerouteOrderGuard g(4);
  const StreamKey s = idempotent(9);
  const Ticket a = g.arrive();
  ASSERT_EQ(g.begin_reroute(a, s, kNew), RerouteRefusal::kNone);
  EXPECT_TRUE(g.reroute_answered(a + 100, s).empty());
  g.direct_answered(a, s);  // wrong kind: a reroute is not a direct write
  EXPECT_EQ(g.in_flight(), 1u);
  EXPECT_EQ(g.forward(g.arrive(), s, kNew), ForwardVerdict::kHold);
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
