// Rerouter: a leader that refused a rerouted write across its own takeover
// (Kafka 4.4.0, about one move in 23): the view names the new leader from
// the old one's hint a few ms before that leader applies the election, so
// the first write of a producer's stream rerouted there is refused
// NOT_LEADER_OR_FOLLOWER and the later ones sent behind it, arriving once it
// leads, OUT_OF_ORDER_SEQUENCE_NUMBER. None was stored: they go again
// together, in order, on the one connection; anything else falls back to
// the answers as they came.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/proxy/reroute/rerouter_rig.h"

namespace epochgate::proxy::testing {
namespace {

constexpr int16_t kNotLeader = codec::kErrNotLeaderOrFollower;
constexpr int16_t kOutOfOrder = codec::kErrOutOfOrderSequenceNumber;
constexpr int64_t kProducer = 4000;

/// The leader answers its oldest pending call with `error` (base offset
/// `base` when it stored it).
void leader_answers(FakeBrokerClient& leader, int16_t error, int64_t base = -1) {
  codec::ProduceResponse m = RerouterRig::leader_answer(leader.call(0), error);
  for (auto& t : m.responses)
    for (auto& p : t.partition_responses) p.base_offset = error == 0 ? base : -1;
  leader.answer(m, 0);
}

/// `n` writes of one idempotent producer to partition 0, each its own
/// request, rerouted by epochgate's view to node 2 (epoch 5), started in order.
std::vector<std::unique_ptr<Request>> stream_to_node_2(RerouterRig& rig, int n) {
  std::vector<std::unique_ptr<Request>> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(rig.request({{.partition = 0, .leader = 2, .epoch = 5, .producer_id = kProducer}}));
    rig.start(*out.back());
  }
  return out;
}

config::Config gap_config(uint32_t max_hold_ms) {
  config::Config c = reroute_config();
  c.reroute.max_hold_ms = max_hold_ms;
  return c;
}

/// A rig whose view already names node 2 (epoch 5) for t/0, as when it
/// learned the move before node 2 applied it, and `n` writes of one
/// producer rerouted there.
struct GapRun {
  explicit GapRun(int n, uint32_t max_hold_ms = 100)
      : rig(gap_config(max_hold_ms)), w(start(rig, n)), two(*rig.brokers.node(2)) {}
  static std::vector<std::unique_ptr<Request>> start(RerouterRig& rig, int n) {
    rig.view.set("t", 0, /*leader=*/2, /*epoch=*/5);
    return stream_to_node_2(rig, n);
  }
  RerouterRig rig;
  std::vector<std::unique_ptr<Request>> w;
  FakeBrokerClient& two;
};

TEST(RerouterSequenceGap, RefusedWriteAndTheGapBehindItGoAgainTogetherInOrder) {
  GapRun run(3);
  auto& [rig, w, two] = run;
  ASSERT_EQ(two.pending(), 3u);
  leader_answers(two, kNotLeader);  // not the leader yet
  EXPECT_FALSE(w[0]->entry.ready) << "held for the writes behind it";
  leader_answers(two, kOutOfOrder);  // it leads now: a gap where the first is missing
  EXPECT_EQ(two.pending(), 1u) << "nothing goes again while a write behind is out";
  leader_answers(two, kOutOfOrder);
  ASSERT_EQ(two.pending(), 3u) << "all three again, once, to the leader that now leads";
  EXPECT_EQ(two.accepted(), 6u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_EQ(RerouterRig::partitions_of(two.call(i)),
              (std::vector<std::pair<int32_t, std::string>>{{0, "records-0"}}))
        << "the bytes the client sent";
  EXPECT_FALSE(w[0]->entry.ready);
  EXPECT_FALSE(w[2]->entry.ready);
  // Answered in the order they went: each request gets its own write's answer.
  leader_answers(two, 0, 200);
  leader_answers(two, 0, 201);
  leader_answers(two, 0, 202);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(w[i]->entry.ready) << i;
    EXPECT_EQ(RerouterRig::results(*w[i])[0].error, 0) << i;
    EXPECT_EQ(RerouterRig::results(*w[i])[0].base_offset, 200 + i) << "sent in the client's order";
    EXPECT_EQ(w[i]->flushes, 1) << i;
  }
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
  EXPECT_EQ(rig.rerouter->guard().streams(), 0u);
}

TEST(RerouterSequenceGap, LaterWriteRerouteDuringTheHoldJoinsTheRun) {
  GapRun run(2);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  auto next = rig.request({{.partition = 0, .leader = 2, .epoch = 5, .producer_id = kProducer}});
  policy::Ticket t = rig.rerouter->guard().next_ticket();
  EXPECT_EQ(rig.rerouter->order_wait(*next->plan, t, true), policy::OrderWait::kNone)
      << "same leader, same connection: it goes";
  rig.start(*next);
  auto direct = rig.request({{.partition = 0, .node = 2, .producer_id = kProducer}});
  EXPECT_EQ(rig.rerouter->order_wait(*direct->plan, rig.rerouter->guard().next_ticket(), false),
            policy::OrderWait::kRerouted)
      << "a write the client sends to the leader itself waits for the run";
  leader_answers(two, kOutOfOrder);
  EXPECT_EQ(two.pending(), 1u) << "the later reroute is still out";
  leader_answers(two, kOutOfOrder);  // past the same gap: it joins
  ASSERT_EQ(two.pending(), 3u);
  leader_answers(two, 0, 300);
  leader_answers(two, 0, 301);
  leader_answers(two, 0, 302);
  EXPECT_EQ(RerouterRig::results(*w[0])[0].base_offset, 300);
  EXPECT_EQ(RerouterRig::results(*w[1])[0].base_offset, 301);
  EXPECT_EQ(RerouterRig::results(*next)[0].base_offset, 302);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterSequenceGap, GapWithAStoredLaterWriteFallsBackToTheAnswersAsTheyCame) {
  GapRun run(3);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  leader_answers(two, kOutOfOrder);
  leader_answers(two, 0, 500);  // stored: the earlier ones may no longer follow it
  EXPECT_EQ(two.pending(), 0u) << "nothing sent again";
  EXPECT_EQ(two.accepted(), 3u);
  for (auto& r : w) ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*w[0])[0].error, kNotLeader);
  EXPECT_EQ(RerouterRig::results(*w[1])[0].error, kOutOfOrder);
  EXPECT_EQ(RerouterRig::results(*w[2])[0].error, 0);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterSequenceGap, LaterWriteWhoseRequestFailedSpoilsTheGap) {
  GapRun run(2);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  two.fail(ClientError::kTimeout);  // it may have been stored
  EXPECT_EQ(two.pending(), 0u);
  EXPECT_EQ(two.accepted(), 2u);
  ASSERT_TRUE(w[0]->entry.ready);
  ASSERT_TRUE(w[1]->entry.ready);
  EXPECT_EQ(RerouterRig::results(*w[0])[0].error, kNotLeader);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterSequenceGap, LoneOutOfOrderSequencePassesThroughUnchanged) {
  GapRun run(2);
  auto& [rig, w, two] = run;
  leader_answers(two, 0, 10);  // the earlier write was stored
  leader_answers(two, kOutOfOrder);
  ASSERT_TRUE(w[1]->entry.ready) << "not held: no refused write of its stream before it";
  EXPECT_EQ(RerouterRig::results(*w[1])[0].error, kOutOfOrder);
  EXPECT_EQ(two.accepted(), 2u);
  auto lone = rig.request({{.partition = 1, .leader = 2, .epoch = 5, .producer_id = kProducer}});
  rig.start(*lone);
  leader_answers(two, kOutOfOrder);
  ASSERT_TRUE(lone->entry.ready);
  EXPECT_EQ(RerouterRig::results(*lone)[1].error, kOutOfOrder);
  EXPECT_EQ(two.accepted(), 3u);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

// Kafka 4.4.0, a real move: three rerouted writes refused before the new
// leader took over, then the client's next write, rerouted there, refused
// past the gap. That one shows the takeover; the four go again in order.
TEST(RerouterSequenceGap, LaterRefusalPastTheGapProvesARunOfRefusals) {
  GapRun run(3);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  leader_answers(two, kNotLeader);
  leader_answers(two, kNotLeader);
  EXPECT_FALSE(w[0]->entry.ready) << "refusals alone: held, waiting for a sign of the takeover";
  auto next = rig.request({{.partition = 0, .leader = 2, .epoch = 5, .producer_id = kProducer}});
  rig.start(*next);
  leader_answers(two, kOutOfOrder);
  ASSERT_EQ(two.pending(), 4u);
  for (int64_t base = 400; base < 404; ++base) leader_answers(two, 0, base);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(RerouterRig::results(*w[i])[0].base_offset, 400 + i);
  EXPECT_EQ(RerouterRig::results(*next)[0].base_offset, 403);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterSequenceGap, RefusalsWithoutASignOfTheTakeoverFallBackOnceMaxHoldPasses) {
  GapRun run(2, /*max_hold_ms=*/1);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  leader_answers(two, kNotLeader);  // both before it took over, and nothing after
  for (int i = 0; i < 10000 && !w[0]->entry.ready; ++i) rig.run_blocking_once();
  EXPECT_EQ(two.accepted(), 2u) << "nothing sent again";
  ASSERT_TRUE(w[0]->entry.ready);
  ASSERT_TRUE(w[1]->entry.ready);
  EXPECT_EQ(RerouterRig::results(*w[0])[0].error, kNotLeader);
  EXPECT_EQ(RerouterRig::results(*w[1])[0].error, kNotLeader);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

// A client that never moves by itself (kafka-python, Produce v7) pipelines
// writes to the old leader's listener; epochgate reroutes them to the leader
// its view names, which has since lost the partition again. Each refusal
// alone would reach the client (a later write went to the same leader behind
// it); the run of refusals, none stored, takes its one more hop together to
// the leader a refresh names at a newer epoch, in order.
TEST(RerouterSequenceGap, RunRefusedByAStalePickTakesOneMoreHopTogetherInOrder) {
  GapRun run(3);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  leader_answers(two, kNotLeader);
  rig.view.set("t", 0, 3, 6);  // a refresh names node 3, a newer epoch
  leader_answers(two, kNotLeader);
  FakeBrokerClient* three = rig.brokers.node(3);
  ASSERT_NE(three, nullptr) << "the run went on to the newer leader";
  ASSERT_EQ(three->pending(), 3u) << "all three, together";
  EXPECT_EQ(two.accepted(), 3u) << "nothing sent to the refusing broker again";
  leader_answers(*three, 0, 700);
  leader_answers(*three, 0, 701);
  leader_answers(*three, 0, 702);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(w[i]->entry.ready) << i;
    EXPECT_EQ(RerouterRig::results(*w[i])[0].error, 0) << i;
    EXPECT_EQ(RerouterRig::results(*w[i])[0].base_offset, 700 + i) << "sent in the client's order";
  }
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
  EXPECT_EQ(rig.rerouter->guard().streams(), 0u);
}

TEST(RerouterSequenceGap, RunRefusedAgainOnItsOneMoreHopGoesToTheClient) {
  GapRun run(2);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  rig.view.set("t", 0, 3, 6);
  leader_answers(two, kNotLeader);
  FakeBrokerClient* three = rig.brokers.node(3);
  ASSERT_NE(three, nullptr);
  ASSERT_EQ(three->pending(), 2u);
  rig.view.set("t", 0, 1, 7);  // moved once more: no third hop
  leader_answers(*three, kNotLeader);
  leader_answers(*three, kNotLeader);
  ASSERT_TRUE(w[0]->entry.ready);
  ASSERT_TRUE(w[1]->entry.ready);
  EXPECT_EQ(RerouterRig::results(*w[0])[0].error, kNotLeader);
  EXPECT_EQ(RerouterRig::results(*w[1])[0].error, kNotLeader);
  EXPECT_TRUE(rig.brokers.node(1) == nullptr || rig.brokers.node(1)->accepted() == 0u);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterSequenceGap, RunRefusedWhileTheViewNamesTheSameEpochWaitsForProof) {
  GapRun run(2);
  auto& [rig, w, two] = run;
  rig.view.set("t", 0, 3, 5);  // another leader, but no newer epoch: no reason to hop
  leader_answers(two, kNotLeader);
  leader_answers(two, kNotLeader);
  EXPECT_FALSE(w[0]->entry.ready) << "held, as refusals across a takeover are";
  EXPECT_TRUE(rig.brokers.node(3) == nullptr || rig.brokers.node(3)->accepted() == 0u);
}

TEST(RerouterSequenceGap, HeldGapFallsBackOnceMaxHoldPasses) {
  GapRun run(2, /*max_hold_ms=*/1);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  rig.view.set("t", 0, 3, 6);  // the view no longer names the refusing broker
  leader_answers(two, kOutOfOrder);
  EXPECT_GT(rig.view.refreshes, 0) << "asks the view again before giving up";
  for (int i = 0; i < 10000 && !w[0]->entry.ready; ++i) rig.run_blocking_once();
  ASSERT_TRUE(w[0]->entry.ready);
  ASSERT_TRUE(w[1]->entry.ready);
  EXPECT_EQ(RerouterRig::results(*w[0])[0].error, kNotLeader);
  EXPECT_EQ(RerouterRig::results(*w[1])[0].error, kOutOfOrder);
  EXPECT_EQ(two.accepted(), 2u);
  EXPECT_TRUE(rig.brokers.node(3) == nullptr || rig.brokers.node(3)->accepted() == 0u);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterSequenceGap, SessionClosedWhileTheGapIsHeldLeavesNothingHeld) {
  GapRun run(2);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  w[0]->sink->alive = false;  // the client's connection closed
  w[1]->sink->alive = false;
  leader_answers(two, kOutOfOrder);
  EXPECT_EQ(two.pending(), 0u) << "nothing sent for a closed session";
  EXPECT_EQ(two.accepted(), 2u);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
  EXPECT_EQ(rig.rerouter->guard().streams(), 0u);
}

TEST(RerouterSequenceGap, SessionClosedDuringTheResendLeavesNothingHeld) {
  GapRun run(2);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  leader_answers(two, kOutOfOrder);
  ASSERT_EQ(two.pending(), 2u);
  w[0]->sink->alive = false;
  w[1]->sink->alive = false;
  w.clear();  // the session freed its requests
  two.disconnect("gone");
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
  EXPECT_EQ(rig.rerouter->guard().streams(), 0u);
}

TEST(RerouterSequenceGap, WorkerStoppingSettlesAHeldGap) {
  GapRun run(2);
  auto& [rig, w, two] = run;
  leader_answers(two, kNotLeader);
  rig.close();
  ASSERT_TRUE(w[0]->entry.ready);
  ASSERT_TRUE(w[1]->entry.ready);
  EXPECT_EQ(RerouterRig::results(*w[0])[0].error, kNotLeader);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

}  // namespace
}  // namespace epochgate::proxy::testing
