// Rerouter: what a rerouted Produce partition's client gets back. The
// leader's answer replaces epochgate's own NOT_LEADER_OR_FOLLOWER; every
// way the leader cannot answer (a failure, a refused send, no connection,
// an identity reason) leaves the local answer in place, so the client
// retries as it would without rerouting, and releases the order guard.
#include <gtest/gtest.h>

#include "tests/proxy/reroute/rerouter_rig.h"

namespace epochgate::proxy::testing {
namespace {

constexpr int32_t kLeader = 2;

/// The error's stable name, for the parameterized tests' names.
std::string error_name(const ::testing::TestParamInfo<ClientError>& info) {
  return client_error_name(info.param);
}

TEST(RerouterDelivery, SendsTheClientsRecordsAcksAndClientIdToTheLeader) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}, {.partition = 1, .leader = kLeader}});
  rig.start(*r);
  FakeBrokerClient* leader = rig.brokers.node(kLeader);
  ASSERT_NE(leader, nullptr);
  EXPECT_EQ(rig.brokers.addresses.at(kLeader).to_string(), "broker-2:9092");
  ASSERT_EQ(leader->pending(), 1u) << "one request per leader";
  codec::ProduceRequest sent;
  ASSERT_TRUE(leader->call().decode(sent));
  EXPECT_EQ(sent.acks, -1);
  EXPECT_EQ(sent.timeout_ms, 1000);
  EXPECT_EQ(leader->call().request.client_id, "app");
  EXPECT_EQ(RerouterRig::partitions_of(leader->call()),
            (std::vector<std::pair<int32_t, std::string>>{{0, "records-0"}, {1, "records-1"}}));
  EXPECT_LE(leader->call().version, 9) << "never above the client's version";
}

TEST(RerouterDelivery, LeadersAnswerReplacesTheLocalOne) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}, {.partition = 1, .leader = kLeader}});
  rig.start(*r);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 2u);
  FakeBrokerClient& leader = *rig.brokers.node(kLeader);
  leader.answer(RerouterRig::leader_answer(leader.call()));
  EXPECT_TRUE(r->entry.ready);
  EXPECT_EQ(r->flushes, 1) << "the session writes the ready answer";
  auto got = RerouterRig::results(*r);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].error, 0);
  EXPECT_EQ(got[0].base_offset, 100);
  EXPECT_EQ(got[1].error, 0);
  EXPECT_EQ(got[1].base_offset, 101);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u) << "answered writes leave the bound";
}

TEST(RerouterDelivery, EachLeaderGetsOnlyItsPartitionsAndTheAnswerWaitsForAll) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = 2}, {.partition = 1, .leader = 3}});
  rig.start(*r);
  FakeBrokerClient& two = *rig.brokers.node(2);
  FakeBrokerClient& three = *rig.brokers.node(3);
  EXPECT_EQ(RerouterRig::partitions_of(two.call()).at(0).first, 0);
  EXPECT_EQ(RerouterRig::partitions_of(three.call()).at(0).first, 1);
  three.answer(RerouterRig::leader_answer(three.call()));
  EXPECT_FALSE(r->entry.ready) << "one leader still owes its part";
  EXPECT_EQ(r->flushes, 0);
  two.answer(RerouterRig::leader_answer(two.call()));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, 0);
  EXPECT_EQ(RerouterRig::results(*r)[1].error, 0);
}

class RerouterLeaderFailure : public ::testing::TestWithParam<ClientError> {};

TEST_P(RerouterLeaderFailure, FallsBackToTheLocalAnswerAndReleasesTheGuard) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}});
  rig.start(*r);
  rig.brokers.node(kLeader)->fail(GetParam());
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(r->flushes, 1);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, codec::kErrNotLeaderOrFollower)
      << "the client retries as without rerouting";
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

INSTANTIATE_TEST_SUITE_P(EveryFailure, RerouterLeaderFailure,
                         ::testing::Values(ClientError::kTimeout, ClientError::kDisconnected,
                                           ClientError::kConnectFailed, ClientError::kLoginFailed,
                                           ClientError::kBadResponse,
                                           ClientError::kUnsupportedVersion),
                         error_name);

TEST(RerouterDelivery, LeaderDisconnectFailsEveryRequestItHeld) {
  RerouterRig rig(reroute_config());
  auto a = rig.request({{.partition = 0, .leader = kLeader}});
  auto b = rig.request({{.partition = 1, .leader = kLeader}});
  rig.start(*a);
  rig.start(*b);
  ASSERT_EQ(rig.brokers.node(kLeader)->pending(), 2u);
  rig.brokers.node(kLeader)->disconnect("broker went away");
  EXPECT_TRUE(a->entry.ready);
  EXPECT_TRUE(b->entry.ready);
  EXPECT_EQ(RerouterRig::results(*a)[0].error, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(RerouterRig::results(*b)[1].error, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterDelivery, UndecodableLeaderAnswerFallsBack) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}});
  rig.start(*r);
  rig.brokers.node(kLeader)->answer_bytes({0x01});
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterDelivery, PartitionTheLeaderLeftOutKeepsTheLocalAnswer) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}, {.partition = 1, .leader = kLeader}});
  rig.start(*r);
  FakeBrokerClient& leader = *rig.brokers.node(kLeader);
  codec::ProduceResponse m = RerouterRig::leader_answer(leader.call());
  m.responses[0].partition_responses.pop_back();  // no word on partition 1
  leader.answer(m);
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, 0);
  EXPECT_EQ(RerouterRig::results(*r)[1].error, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

class RerouterRefusedSend : public ::testing::TestWithParam<ClientError> {};

TEST_P(RerouterRefusedSend, KeepsTheLocalAnswerWithoutWaiting) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}});
  rig.brokers.client(kLeader, {"broker-2", 9092})->refuse_with(GetParam());
  rig.start(*r);
  EXPECT_EQ(rig.brokers.node(kLeader)->pending(), 0u);
  EXPECT_EQ(r->entry.outstanding(), 0u) << "the refused part counts as answered at once";
  EXPECT_TRUE(finish_rerouted(r->entry));
  EXPECT_EQ(RerouterRig::results(*r)[0].error, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

INSTANTIATE_TEST_SUITE_P(EveryRefusal, RerouterRefusedSend,
                         ::testing::Values(ClientError::kBusy, ClientError::kClosed,
                                           ClientError::kUnsupportedVersion),
                         error_name);

TEST(RerouterDelivery, NoConnectionToTheLeaderKeepsTheLocalAnswer) {
  RerouterRig rig(reroute_config());
  rig.brokers.refuse_node(kLeader);
  auto r = rig.request({{.partition = 0, .leader = kLeader}});
  rig.start(*r);
  EXPECT_EQ(r->entry.outstanding(), 0u);
  EXPECT_TRUE(finish_rerouted(r->entry));
  EXPECT_EQ(RerouterRig::results(*r)[0].error, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterDelivery, IdentityRefusalSendsNothing) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}});
  rig.start(*r, "identity");
  EXPECT_EQ(rig.brokers.node(kLeader), nullptr) << "no connection is even asked for";
  EXPECT_EQ(r->entry.outstanding(), 0u);
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterDelivery, PlanRefusalSendsNothing) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}});
  r->plan->refuse = "buffer_budget";
  rig.start(*r);
  EXPECT_EQ(rig.brokers.node(kLeader), nullptr);
  EXPECT_EQ(r->entry.outstanding(), 0u);
}

TEST(RerouterDelivery, UnreadableBatchIsNeverSent) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}, {.partition = 1, .leader = kLeader}});
  r->plan->targets[0].batch_error = "batch_unreadable";
  rig.start(*r);
  FakeBrokerClient& leader = *rig.brokers.node(kLeader);
  ASSERT_EQ(leader.pending(), 1u);
  EXPECT_EQ(RerouterRig::partitions_of(leader.call()).size(), 1u);
  EXPECT_EQ(RerouterRig::partitions_of(leader.call()).at(0).first, 1);
  leader.answer(RerouterRig::leader_answer(leader.call()));
  ASSERT_TRUE(r->entry.ready);
  EXPECT_EQ(RerouterRig::results(*r)[0].error, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(RerouterRig::results(*r)[1].error, 0);
}

TEST(RerouterDelivery, AnswerAfterTheSessionWentIsDroppedAndReleasesTheGuard) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}});
  rig.start(*r);
  r->sink->alive = false;  // the session closed; its entries are gone
  FakeBrokerClient& leader = *rig.brokers.node(kLeader);
  leader.answer(RerouterRig::leader_answer(leader.call()));
  EXPECT_EQ(r->flushes, 0);
  EXPECT_FALSE(r->entry.ready) << "nothing touches a dead session's entry";
  EXPECT_EQ(rig.rerouter->guard().in_flight(), 0u);
}

TEST(RerouterDelivery, ClosingFailsWhatIsStillOutAndSendsNothingMore) {
  RerouterRig rig(reroute_config());
  auto r = rig.request({{.partition = 0, .leader = kLeader}});
  rig.start(*r);
  rig.close();
  EXPECT_TRUE(rig.brokers.closed());
  EXPECT_TRUE(r->entry.ready) << "the client gets its local answer";
  EXPECT_EQ(RerouterRig::results(*r)[0].error, codec::kErrNotLeaderOrFollower);
  auto later = rig.request({{.partition = 1, .leader = kLeader}});
  rig.start(*later);
  EXPECT_EQ(rig.brokers.node(kLeader)->pending(), 0u);
  EXPECT_EQ(later->entry.outstanding(), 0u);
}

}  // namespace
}  // namespace epochgate::proxy::testing
