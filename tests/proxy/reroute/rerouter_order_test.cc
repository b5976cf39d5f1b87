// Rerouter: one producer's writes to one partition keep their order while
// some of them are rerouted (the order guard and its tickets), and what the
// rerouter holds is bounded by reroute.max_in_flight.
#include <gtest/gtest.h>

#include "tests/proxy/reroute/rerouter_rig.h"

namespace epochgate::proxy::testing {
namespace {

using policy::OrderWait;
using policy::RerouteRefusal;

size_t refused(const RerouterRig& rig, RerouteRefusal r) {
  return rig.rerouter->guard().counters().refused[static_cast<size_t>(r)];
}

TEST(RerouterOrder, ReroutesOfOneStreamGoToTheLeaderInArrivalOrder) {
  RerouterRig rig(reroute_config());
  auto first = rig.request({{.partition = 0, .leader = 2}});
  auto second = rig.request({{.partition = 0, .leader = 2}, {.partition = 1, .leader = 2}});
  rig.start(*first);
  EXPECT_EQ(rig.rerouter->order_wait(*second->plan, rig.rerouter->guard().next_ticket(), true),
            OrderWait::kNone)
      << "an earlier reroute to the same leader does not hold a later one";
  rig.start(*second);
  FakeBrokerClient& leader = *rig.brokers.node(2);
  ASSERT_EQ(leader.pending(), 2u) << "both on one connection: the leader stores them in order";
  EXPECT_EQ(RerouterRig::partitions_of(leader.call(0)).size(), 1u);
  EXPECT_EQ(RerouterRig::partitions_of(leader.call(1)).size(), 2u);
  EXPECT_LT(leader.call(0).correlation_id, leader.call(1).correlation_id);
}

TEST(RerouterOrder, ForwardedWriteWaitsBehindAReroutedOneOfItsStream) {
  RerouterRig rig(reroute_config());
  auto rerouted = rig.request({{.partition = 0, .leader = 2}});
  rig.start(*rerouted);
  // The client moved to the leader: its next write of the partition goes
  // there directly, and must not overtake the rerouted one.
  auto direct = rig.request({{.partition = 0, .node = 2}});
  policy::Ticket t = rig.rerouter->guard().next_ticket();
  EXPECT_EQ(rig.rerouter->order_wait(*direct->plan, t, true), OrderWait::kRerouted);
  rig.rerouter->wait_for_order(direct->sink);
  FakeBrokerClient& leader = *rig.brokers.node(2);
  leader.answer(RerouterRig::leader_answer(leader.call()));
  EXPECT_EQ(direct->reoffers, 1) << "the guard changed: the waiting session offers it again";
  EXPECT_EQ(rig.rerouter->order_wait(*direct->plan, t, true), OrderWait::kNone);
}

TEST(RerouterOrder, RerouteWaitsBehindAnEarlierWriteOnTheClientsPath) {
  RerouterRig rig(reroute_config());
  auto earlier = rig.request({{.partition = 0, .node = 1}});
  rig.start(*earlier);
  auto later = rig.request({{.partition = 0, .leader = 2}});
  policy::Ticket t = rig.rerouter->guard().next_ticket();
  EXPECT_EQ(rig.rerouter->order_wait(*later->plan, t, true), OrderWait::kClientPath)
      << "the earlier write's answer may itself be rerouted: this one goes after it";
  EXPECT_EQ(rig.rerouter->order_wait(*later->plan, t, false), OrderWait::kNone)
      << "a write that cannot be rerouted anyway never waits";
  rig.rerouter->wait_for_order(later->sink);
  rig.broker_answers(*earlier, 0);
  EXPECT_EQ(later->reoffers, 1);
  EXPECT_EQ(rig.rerouter->order_wait(*later->plan, t, true), OrderWait::kNone);
}

TEST(RerouterOrder, RerouteThatWouldOvertakeAnEarlierWriteFallsBack) {
  RerouterRig rig(reroute_config());
  auto earlier = rig.request({{.partition = 0, .node = 1}});
  rig.start(*earlier);
  auto later = rig.request({{.partition = 0, .leader = 2}});
  rig.start(*later);  // not kept back (its wait ran out): the guard refuses it
  EXPECT_EQ(rig.brokers.node(2), nullptr) << "nothing sent past the earlier write";
  EXPECT_EQ(refused(rig, RerouteRefusal::kEarlierInFlight), 1u);
  EXPECT_TRUE(finish_rerouted(later->entry));
  EXPECT_EQ(RerouterRig::results(*later)[0].error, codec::kErrNotLeaderOrFollower);
}

TEST(RerouterOrder, StreamFallsBackUntilTheClientMovesToTheLeader) {
  RerouterRig rig(reroute_config());
  auto earlier = rig.request({{.partition = 0, .node = 1}});
  rig.start(*earlier);
  auto refused_one = rig.request({{.partition = 0, .leader = 2}});
  rig.start(*refused_one);
  rig.broker_answers(*earlier, 0);
  // The client will resend the refused write; nothing of the stream may be
  // rerouted past that resend.
  auto next = rig.request({{.partition = 0, .leader = 2}});
  rig.start(*next);
  EXPECT_EQ(rig.brokers.node(2), nullptr);
  EXPECT_EQ(refused(rig, RerouteRefusal::kStreamFellBack), 1u);
  // The client moved: a write forwarded to the leader clears the state.
  auto moved = rig.request({{.partition = 0, .node = 2}});
  rig.start(*moved);
  rig.broker_answers(*moved, 0);
  auto after = rig.request({{.partition = 0, .leader = 2}});
  rig.start(*after);
  ASSERT_NE(rig.brokers.node(2), nullptr);
  EXPECT_EQ(rig.brokers.node(2)->pending(), 1u);
}

TEST(RerouterOrder, StreamsOfOtherProducersDoNotWait) {
  RerouterRig rig(reroute_config());
  auto a = rig.request({{.partition = 0, .node = 1, .producer_id = 7}});
  rig.start(*a);
  auto b = rig.request({{.partition = 0, .leader = 2, .producer_id = 8}});
  EXPECT_EQ(rig.rerouter->order_wait(*b->plan, rig.rerouter->guard().next_ticket(), true),
            OrderWait::kNone);
  rig.start(*b);
  ASSERT_NE(rig.brokers.node(2), nullptr);
  EXPECT_EQ(rig.brokers.node(2)->pending(), 1u);
}

TEST(RerouterOrder, MaxInFlightBoundsReroutes) {
  RerouterRig rig(reroute_config(/*max_in_flight=*/1));
  auto a = rig.request({{.partition = 0, .leader = 2}});
  auto b = rig.request({{.partition = 1, .leader = 2}});
  rig.start(*a);
  rig.start(*b);
  EXPECT_EQ(rig.brokers.node(2)->pending(), 1u) << "only the first fits";
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 1u);
  EXPECT_EQ(refused(rig, RerouteRefusal::kMaxInFlight), 1u);
  EXPECT_TRUE(finish_rerouted(b->entry));
  EXPECT_EQ(RerouterRig::results(*b)[1].error, codec::kErrNotLeaderOrFollower);
}

TEST(RerouterOrder, ZeroMaxInFlightTurnsReroutingOff) {
  RerouterRig rig(reroute_config(/*max_in_flight=*/0));
  EXPECT_FALSE(rig.rerouter->enabled());
  auto a = rig.request({{.partition = 0, .leader = 2}});
  rig.start(*a);
  EXPECT_EQ(rig.brokers.node(2), nullptr);
  EXPECT_EQ(a->entry.outstanding(), 0u);
}

TEST(RerouterOrder, ParkedWriteCountsAgainstTheBoundUntilUnparked) {
  RerouterRig rig(reroute_config(/*max_in_flight=*/2));
  auto rerouted = rig.request({{.partition = 0, .leader = 2}});
  rig.start(*rerouted);
  auto waiting = rig.request({{.partition = 0, .node = 2}});
  policy::Ticket t = rig.rerouter->guard().arrive();
  std::vector<policy::StreamKey> parked;
  EXPECT_TRUE(rig.rerouter->park(*waiting->plan, t, true, parked));
  EXPECT_EQ(parked.size(), 1u);
  EXPECT_EQ(rig.rerouter->guard().held(), 1u);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 2u);
  // Parking again is idempotent.
  EXPECT_TRUE(rig.rerouter->park(*waiting->plan, t, true, parked));
  EXPECT_EQ(rig.rerouter->guard().held(), 1u);
  // A third write of another stream finds no room to be rerouted.
  auto other = rig.request({{.partition = 1, .leader = 2}});
  rig.start(*other);
  EXPECT_EQ(rig.brokers.node(2)->pending(), 1u);
  EXPECT_EQ(refused(rig, RerouteRefusal::kMaxInFlight), 1u);
  rig.rerouter->unpark(t, parked);
  EXPECT_TRUE(parked.empty());
  EXPECT_EQ(rig.rerouter->guard().held(), 0u);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 1u);
}

TEST(RerouterOrder, WriteToRerouteFindsNoRoomToWaitWhenTheBoundIsFull) {
  RerouterRig rig(reroute_config(/*max_in_flight=*/1));
  auto earlier = rig.request({{.partition = 0, .node = 1}});
  rig.start(*earlier);
  auto filler = rig.request({{.partition = 1, .leader = 2}});
  rig.start(*filler);
  ASSERT_EQ(rig.rerouter->guard().in_flight(), 1u);
  auto later = rig.request({{.partition = 0, .leader = 2}});
  policy::Ticket t = rig.rerouter->guard().arrive();
  ASSERT_EQ(rig.rerouter->order_wait(*later->plan, t, true), OrderWait::kClientPath);
  std::vector<policy::StreamKey> parked;
  EXPECT_FALSE(rig.rerouter->park(*later->plan, t, true, parked)) << "hold_full";
  EXPECT_TRUE(parked.empty());
  EXPECT_EQ(rig.rerouter->guard().held(), 0u);
}

TEST(RerouterOrder, OrderWaitersAreWokenOnceEach) {
  RerouterRig rig(reroute_config());
  auto rerouted = rig.request({{.partition = 0, .leader = 2}});
  rig.start(*rerouted);
  auto waiting = rig.request({{.partition = 0, .node = 2}});
  rig.rerouter->wait_for_order(waiting->sink);
  rig.rerouter->wait_for_order(waiting->sink);  // registered once
  FakeBrokerClient& leader = *rig.brokers.node(2);
  leader.answer(RerouterRig::leader_answer(leader.call()));
  EXPECT_EQ(waiting->reoffers, 1);
  auto another = rig.request({{.partition = 3, .leader = 2}});
  rig.start(*another);
  EXPECT_EQ(waiting->reoffers, 1) << "forgotten once woken: it registers again if it still waits";
}

}  // namespace
}  // namespace epochgate::proxy::testing
