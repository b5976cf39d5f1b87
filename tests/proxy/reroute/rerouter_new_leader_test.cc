// Rerouter: writes a broker refused with NOT_LEADER_OR_FOLLOWER. A write
// forwarded on the client's path goes to the leader the view names (now,
// or once a refresh names one); a rerouted write whose leader moved on
// takes at most one more hop, and only to a strictly newer leader. Order
// across the move: later writes of the stream follow on the same leader.
#include <gtest/gtest.h>

#include "tests/proxy/reroute/rerouter_rig.h"

namespace epochgate::proxy::testing {
namespace {

constexpr int16_t kNotLeader = codec::kErrNotLeaderOrFollower;
constexpr int16_t kOutOfOrderSequence = codec::kErrOutOfOrderSequenceNumber;

TEST(RerouterNewLeader, RefusedForwardedWriteGoesToTheLeaderTheViewNames) {
  RerouterRig rig(reroute_config());
  rig.view.set("t", 0, /*leader=*/2, /*epoch=*/6);
  auto r = rig.request({{.partition = 0, .node = 1}, {.partition = 1, .node = 1}});
  rig.start(*r);
  // The broker took partition 1 and refused partition 0.
  r->entry.answer_part(static_cast<size_t>(r->upstream_part));
  codec::ProduceResponse broker;
  auto& topic = broker.responses.emplace_back();
  topic.name = "t";
  topic.partition_responses.resize(2);
  topic.partition_responses[0].index = 0;
  topic.partition_responses[0].error_code = kNotLeader;
  topic.partition_responses[0].base_offset = -1;  // never appended
  topic.partition_responses[1].index = 1;
  topic.partition_responses[1].base_offset = 7;
  codec::ResponseHeader h;
  h.correlation_id = 11;
  r->entry.response.clear();
  codec::encode_frame(r->entry.response, h, broker, r->plan->version);
  // As the response pipeline leaves it: decoded in the RerouteState.
  r->entry.reroute->response = broker;
  r->entry.reroute->response_header = h;
  rig.rerouter->after_broker_answer(r->entry);
  EXPECT_FALSE(finish_rerouted(r->entry)) << "the leader's part is still out";
  FakeBrokerClient* leader = rig.brokers.node(2);
  ASSERT_NE(leader, nullptr);
  ASSERT_EQ(leader->pending(), 1u);
  EXPECT_EQ(RerouterRig::partitions_of(leader->call()),
            (std::vector<std::pair<int32_t, std::string>>{{0, "records-0"}}))
      << "only the refused partition, with the bytes the client sent";
  leader->answer(RerouterRig::leader_answer(leader->call()));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(r->flushes, 1);
  auto got = RerouterRig::results(*r);
  EXPECT_EQ(got[0].error, 0);
  EXPECT_EQ(got[0].base_offset, 100);
  EXPECT_EQ(got[1].error, 0);
  EXPECT_EQ(got[1].base_offset, 7) << "the broker's own answer stays";
}

// The old leader's refusal of partition 0 with `base_offset`: what Kafka's
// delayed acks=all answer carries when the election cuts its wait (the
// write was appended before leadership was lost), or -1 for a write that
// never was.
void old_leader_refuses(RerouterRig& rig, Request& r, int64_t base_offset) {
  r.entry.answer_part(static_cast<size_t>(r.upstream_part));
  codec::ProduceResponse broker;
  auto& topic = broker.responses.emplace_back();
  topic.name = "t";
  auto& part = topic.partition_responses.emplace_back();
  part.index = 0;
  part.error_code = kNotLeader;
  part.base_offset = base_offset;
  codec::ResponseHeader h;
  h.correlation_id = 11;
  r.entry.response.clear();
  codec::encode_frame(r.entry.response, h, broker, r.plan->version);
  r.entry.reroute->response = broker;
  r.entry.reroute->response_header = h;
  rig.rerouter->after_broker_answer(r.entry);
  finish_rerouted(r.entry);
}

TEST(RerouterNewLeader, ANonIdempotentWriteTheOldLeaderMayHaveStoredIsNotResent) {
  RerouterRig rig(reroute_config());
  rig.view.set("t", 0, /*leader=*/2, /*epoch=*/6);
  auto r = rig.request({{.partition = 0, .node = 1}});
  rig.start(*r);
  old_leader_refuses(rig, *r, /*base_offset=*/677);
  EXPECT_EQ(rig.brokers.node(2), nullptr) << "a resend could store the write twice";
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, kNotLeader) << "the refusal, as directly";
}

TEST(RerouterNewLeader, AnIdempotentWriteTheOldLeaderMayHaveStoredIsResent) {
  RerouterRig rig(reroute_config());
  rig.view.set("t", 0, 2, 6);
  auto r = rig.request({{.partition = 0, .node = 1, .producer_id = 9}});
  rig.start(*r);
  old_leader_refuses(rig, *r, 677);
  FakeBrokerClient* leader = rig.brokers.node(2);
  ASSERT_NE(leader, nullptr) << "its sequence makes a duplicate harmless at the new leader";
  ASSERT_EQ(leader->pending(), 1u);
  leader->answer(RerouterRig::leader_answer(leader->call()));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, 0);
}

TEST(RerouterNewLeader, ANonIdempotentWriteRefusedWithoutAnOffsetIsResent) {
  RerouterRig rig(reroute_config());
  rig.view.set("t", 0, 2, 6);
  auto r = rig.request({{.partition = 0, .node = 1}});
  rig.start(*r);
  old_leader_refuses(rig, *r, -1);
  FakeBrokerClient* leader = rig.brokers.node(2);
  ASSERT_NE(leader, nullptr);
  leader->answer(RerouterRig::leader_answer(leader->call()));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, 0);
}

TEST(RerouterNewLeader, AcceptedForwardedWritesAreNotRerouted) {
  RerouterRig rig(reroute_config());
  rig.view.set("t", 0, 2, 6);
  auto r = rig.request({{.partition = 0, .node = 1}});
  rig.start(*r);
  rig.broker_answers(*r, 0);
  EXPECT_TRUE(r->entry.ready);
  EXPECT_EQ(rig.brokers.node(2), nullptr);
  EXPECT_EQ(rig.rerouter->guard().streams(), 0u) << "answered: nothing of it is tracked";
}

TEST(RerouterNewLeader, WaitsForARefreshToNameTheLeader) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .node = 1}});
  rig.start(*r);
  rig.broker_answers(*r, kNotLeader);
  EXPECT_GE(rig.view.refreshes, 1) << "an urgent refresh is asked for";
  EXPECT_FALSE(r->entry.ready) << "the answer is kept back while the view learns";
  EXPECT_EQ(rig.brokers.node(2), nullptr);
  rig.view.set("t", 0, 2, 6);
  rig.rerouter->view_changed();
  ASSERT_NE(rig.brokers.node(2), nullptr);
  FakeBrokerClient& leader = *rig.brokers.node(2);
  ASSERT_EQ(leader.pending(), 1u);
  leader.answer(RerouterRig::leader_answer(leader.call()));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, 0);
}

TEST(RerouterNewLeader, WithoutWaitAnUnknownLeaderFallsBackAtOnce) {
  RerouterRig rig(reroute_config(1024, /*max_wait_ms=*/0));
  auto r = rig.request({{.partition = 0, .node = 1}});
  rig.start(*r);
  rig.broker_answers(*r, kNotLeader);
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, kNotLeader) << "the broker's answer as it came";
  EXPECT_EQ(rig.rerouter->guard().streams(), 0u);
}

TEST(RerouterNewLeader, ViewNamingTheRefusingBrokerIsNoLeader) {
  RerouterRig rig(reroute_config(1024, /*max_wait_ms=*/0));
  rig.view.set("t", 0, /*leader=*/1, 6);
  auto r = rig.request({{.partition = 0, .node = 1}});
  rig.start(*r);
  rig.broker_answers(*r, kNotLeader);
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(rig.brokers.node(1), nullptr) << "never back to the broker that refused it";
  EXPECT_EQ(RerouterRig::results(*r)[0].error, kNotLeader);
}

TEST(RerouterNewLeader, SessionGoneWhileWaitingSendsNothing) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .node = 1}});
  rig.start(*r);
  rig.broker_answers(*r, kNotLeader);
  r->sink->alive = false;
  rig.view.set("t", 0, 2, 6);
  rig.rerouter->view_changed();
  EXPECT_EQ(rig.brokers.node(2), nullptr);
  EXPECT_EQ(r->flushes, 0);
  EXPECT_EQ(rig.rerouter->guard().streams(), 0u) << "the waiting write left the guard";
}

TEST(RerouterNewLeader, IdentityRefusalAlsoCoversTheBrokersRefusal) {
  RerouterRig rig(reroute_config());
  rig.view.set("t", 0, 2, 6);
  auto r = rig.request({{.partition = 0, .node = 1}});
  rig.start(*r, "identity");
  rig.broker_answers(*r, kNotLeader);
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(rig.brokers.node(2), nullptr);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, kNotLeader);
}

TEST(RerouterNewLeader, LaterWritesOfTheStreamFollowOnTheSameLeaderAcrossTheMove) {
  RerouterRig rig(reroute_config());
  rig.view.set("t", 0, 2, 6);
  auto first = rig.request({{.partition = 0, .node = 1}});
  auto second = rig.request({{.partition = 0, .node = 1}});
  rig.start(*first);
  rig.start(*second);
  rig.broker_answers(*first, kNotLeader);
  rig.broker_answers(*second, kNotLeader);
  FakeBrokerClient& leader = *rig.brokers.node(2);
  ASSERT_EQ(leader.pending(), 2u);
  EXPECT_LT(leader.call(0).correlation_id, leader.call(1).correlation_id);
  leader.answer(RerouterRig::leader_answer(leader.call(0)), 0);
  leader.answer(RerouterRig::leader_answer(leader.call(0)), 0);
  EXPECT_TRUE(first->entry.ready);
  EXPECT_TRUE(second->entry.ready);
  EXPECT_EQ(RerouterRig::results(*first)[0].error, 0);
  EXPECT_EQ(RerouterRig::results(*second)[0].error, 0);
  EXPECT_EQ(rig.rerouter->guard().streams(), 0u);
}

TEST(RerouterNewLeader, RefusingLeaderSendsTheWriteOneHopOnToANewerLeader) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = 2, .epoch = 5}});
  rig.start(*r);
  rig.view.set("t", 0, /*leader=*/3, /*epoch=*/6);
  FakeBrokerClient& two = *rig.brokers.node(2);
  two.answer(RerouterRig::leader_answer(two.call(), kNotLeader));
  EXPECT_FALSE(r->entry.ready);
  ASSERT_NE(rig.brokers.node(3), nullptr);
  FakeBrokerClient& three = *rig.brokers.node(3);
  ASSERT_EQ(three.pending(), 1u);
  three.answer(RerouterRig::leader_answer(three.call()));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, 0);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

// A real move (Kafka 4.4.0, librdkafka 2.15.1): the leader refused the
// first of two pipelined rerouted writes and, having taken over between
// them, answered the second OUT_OF_ORDER_SEQUENCE_NUMBER. A hop of the first
// would land after the second; the client, seeing the first succeed, took
// the second's error as fatal. The refusal goes back to the client instead.
// With reroute.max_hold_ms 0 the two are not held to go again together
// (tests/proxy/reroute/rerouter_sequence_gap_test.cc).
TEST(RerouterNewLeader, NoHopForARefusedWriteWithALaterOneBehindItOnTheSameLeader) {
  config::Config c = reroute_config();
  c.reroute.max_hold_ms = 0;
  RerouterRig rig(c);
  auto first = rig.request({{.partition = 0, .leader = 2, .epoch = 5}});
  auto second = rig.request({{.partition = 0, .leader = 2, .epoch = 5}});
  rig.start(*first);
  rig.start(*second);
  rig.view.set("t", 0, /*leader=*/3, /*epoch=*/6);  // a hop would be allowed alone
  FakeBrokerClient& two = *rig.brokers.node(2);
  ASSERT_EQ(two.pending(), 2u);
  two.answer(RerouterRig::leader_answer(two.call(0), kNotLeader), 0);
  ASSERT_TRUE(first->entry.ready) << "not kept back for a hop";
  EXPECT_EQ(RerouterRig::results(*first)[0].error, kNotLeader);
  EXPECT_TRUE(rig.brokers.node(3) == nullptr || rig.brokers.node(3)->pending() == 0u)
      << "the first write is not sent again";
  two.answer(RerouterRig::leader_answer(two.call(0), kOutOfOrderSequence), 0);
  ASSERT_TRUE(second->entry.ready);
  EXPECT_EQ(RerouterRig::results(*second)[0].error, kOutOfOrderSequence)
      << "the leader's own answer, after the first one's refusal";
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterNewLeader, SecondHopsRefusalGoesBackToTheClient) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = 2, .epoch = 5}});
  rig.start(*r);
  rig.view.set("t", 0, 3, 6);
  FakeBrokerClient& two = *rig.brokers.node(2);
  two.answer(RerouterRig::leader_answer(two.call(), kNotLeader));
  rig.view.set("t", 0, 4, 7);
  FakeBrokerClient& three = *rig.brokers.node(3);
  three.answer(RerouterRig::leader_answer(three.call(), kNotLeader));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(rig.brokers.node(4), nullptr) << "never a third hop";
  EXPECT_EQ(RerouterRig::results(*r)[0].error, kNotLeader);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterNewLeader, NoHopToALeaderThatIsNotNewer) {
  RerouterRig rig(reroute_config(1024, /*max_wait_ms=*/0));
  auto r = rig.request({{.partition = 0, .leader = 2, .epoch = 5}});
  rig.start(*r);
  rig.view.set("t", 0, 3, /*epoch=*/5);  // disagrees, but not newer
  FakeBrokerClient& two = *rig.brokers.node(2);
  two.answer(RerouterRig::leader_answer(two.call(), kNotLeader));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(rig.brokers.node(3), nullptr);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, kNotLeader);
}

TEST(RerouterNewLeader, HopWaitsForARefreshToNameANewerLeader) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = 2, .epoch = 5}});
  rig.start(*r);
  FakeBrokerClient& two = *rig.brokers.node(2);
  int before = rig.view.refreshes;
  two.answer(RerouterRig::leader_answer(two.call(), kNotLeader));
  EXPECT_GT(rig.view.refreshes, before);
  EXPECT_FALSE(r->entry.ready);
  rig.view.set("t", 0, 3, 6);
  rig.rerouter->view_changed();
  ASSERT_NE(rig.brokers.node(3), nullptr);
  FakeBrokerClient& three = *rig.brokers.node(3);
  three.answer(RerouterRig::leader_answer(three.call()));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, 0);
}

// The same hazard the other way round: a refused write waits for a refresh
// to name its next leader, and a later write of its stream is planned to
// the leader that refused it. Sent now, the later one would reach that
// leader first (were it to take over, ahead of the earlier write's hop), so
// it waits until the earlier one is answered or given up.
TEST(RerouterNewLeader, LaterWriteWaitsWhileAnEarlierOneWaitsForItsHop) {
  RerouterRig rig(reroute_config());
  auto first = rig.request({{.partition = 0, .leader = 2, .epoch = 5}});
  rig.start(*first);
  FakeBrokerClient& two = *rig.brokers.node(2);
  two.answer(RerouterRig::leader_answer(two.call(), kNotLeader));
  ASSERT_FALSE(first->entry.ready) << "kept back for a hop once a refresh names the leader";
  auto second = rig.request({{.partition = 0, .leader = 2, .epoch = 5}});
  policy::Ticket t = rig.rerouter->guard().next_ticket();
  EXPECT_EQ(rig.rerouter->order_wait(*second->plan, t, true), policy::OrderWait::kRerouted)
      << "not sent to the refusing leader ahead of the earlier write's hop";
  rig.rerouter->wait_for_order(second->sink);
  rig.view.set("t", 0, 3, 6);
  rig.rerouter->view_changed();
  ASSERT_NE(rig.brokers.node(3), nullptr);
  EXPECT_EQ(rig.rerouter->order_wait(*second->plan, t, true), policy::OrderWait::kRerouted)
      << "the hop is under way to node 3: a write planned to node 2 still waits";
  FakeBrokerClient& three = *rig.brokers.node(3);
  three.answer(RerouterRig::leader_answer(three.call()));
  ASSERT_TRUE(first->entry.ready);
  EXPECT_EQ(RerouterRig::results(*first)[0].error, 0);
  EXPECT_GE(second->reoffers, 1) << "offered again once the earlier write was answered";
  EXPECT_EQ(rig.rerouter->order_wait(*second->plan, t, true), policy::OrderWait::kNone);
}

}  // namespace
}  // namespace epochgate::proxy::testing
