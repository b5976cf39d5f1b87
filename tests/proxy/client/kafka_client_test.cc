// KafkaClient: requests and their answers on one broker connection. Each
// request gets a correlation id of its own and exactly one callback, never
// from inside send(); answers are matched in order; a connection that fails
// fails what it held and the next request dials again; the number of
// requests a client takes is bounded.
#include <gtest/gtest.h>

#include "tests/proxy/client/kafka_client_rig.h"

namespace epochgate::proxy::testing {
namespace {

TEST(KafkaClient, AnswersReachTheirRequestsInOrder) {
  KafkaClientRig rig;
  ASSERT_EQ(rig.send(), ClientError::kNone);
  ASSERT_EQ(rig.send(), ClientError::kNone);
  rig.connect();
  auto seen = rig.requests();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].api_key, 0);
  EXPECT_EQ(seen[0].api_version, 9) << "the highest version both sides speak";
  EXPECT_EQ(seen[0].client_id, "epochgate");
  EXPECT_NE(seen[0].correlation_id, seen[1].correlation_id);
  rig.answer(seen[0].correlation_id, 9, /*throttle_time_ms=*/11);
  ASSERT_EQ(rig.outcomes.size(), 1u);
  rig.answer(seen[1].correlation_id, 9, 22);
  ASSERT_EQ(rig.outcomes.size(), 2u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kNone);
  EXPECT_EQ(rig.outcomes[0].correlation_id, seen[0].correlation_id);
  EXPECT_EQ(rig.outcomes[0].throttle_time_ms, 11);
  EXPECT_EQ(rig.outcomes[1].correlation_id, seen[1].correlation_id);
  EXPECT_EQ(rig.outcomes[1].throttle_time_ms, 22);
  EXPECT_EQ(rig.client->outstanding(), 0u);
}

TEST(KafkaClient, CallerBoundsPickTheVersionAndClientId) {
  KafkaClientRig rig;
  SendOptions o;
  o.max_version = 7;
  o.client_id = "app-1";
  rig.send(o);
  rig.connect();
  auto seen = rig.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].api_version, 7);
  EXPECT_EQ(seen[0].client_id, "app-1") << "a request made for a client carries its id";
}

TEST(KafkaClient, CallbackNeverRunsInsideSend) {
  KafkaClientRig rig;
  rig.client->set_targets({});  // the dial fails at once, from the loop
  EXPECT_EQ(rig.send(), ClientError::kNone);
  EXPECT_TRUE(rig.outcomes.empty());
  rig.run();
  ASSERT_EQ(rig.outcomes.size(), 1u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kConnectFailed);
}

TEST(KafkaClient, AnswerWithAnotherCorrelationIdFailsTheConnectionsRequests) {
  KafkaClientRig rig;
  rig.send();
  rig.send();
  rig.connect();
  auto seen = rig.requests();
  ASSERT_EQ(seen.size(), 2u);
  rig.answer(seen[1].correlation_id, 9);  // out of order: not the oldest's
  ASSERT_EQ(rig.outcomes.size(), 2u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kBadResponse);
  EXPECT_EQ(rig.outcomes[1].error, ClientError::kBadResponse);
  EXPECT_EQ(rig.lost, std::vector<ClientError>{ClientError::kBadResponse});
  EXPECT_FALSE(rig.client->ready()) << "the connection is dropped";
}

TEST(KafkaClient, UndecodableAnswerFailsOnlyItsRequest) {
  KafkaClientRig rig;
  rig.send();
  rig.send();
  rig.connect();
  auto seen = rig.requests();
  // A v9 header (correlation id, no tagged fields) and a body cut short.
  std::string frame = std::string("\x00\x00\x00\x06", 4);
  for (int s = 24; s >= 0; s -= 8)
    frame.push_back(static_cast<char>((seen[0].correlation_id >> s) & 0xff));
  frame += std::string("\x00\x05", 2);
  rig.broker->peer_sends(frame);
  rig.run();
  ASSERT_EQ(rig.outcomes.size(), 1u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kBadResponse);
  EXPECT_TRUE(rig.client->ready()) << "the frame was whole: the connection stays";
  rig.answer(seen[1].correlation_id, 9);
  ASSERT_EQ(rig.outcomes.size(), 2u);
  EXPECT_EQ(rig.outcomes[1].error, ClientError::kNone);
}

TEST(KafkaClient, RefusesPastMaxOutstandingWithBusy) {
  KafkaClientOptions o;
  o.max_outstanding = 2;
  KafkaClientRig rig(o);
  EXPECT_EQ(rig.send(), ClientError::kNone);
  EXPECT_EQ(rig.send(), ClientError::kNone);
  EXPECT_EQ(rig.send(), ClientError::kBusy);
  EXPECT_EQ(rig.client->outstanding(), 2u);
  rig.connect();
  auto seen = rig.requests();
  ASSERT_EQ(seen.size(), 2u) << "the refused one never went";
  rig.answer(seen[0].correlation_id, 9);
  EXPECT_EQ(rig.send(), ClientError::kNone) << "an answer frees room";
  rig.run();
  rig.answer(seen[1].correlation_id, 9);
  EXPECT_EQ(rig.outcomes.size(), 2u) << "refused sends get no callback";
}

TEST(KafkaClient, ConnectFailureFailsEveryWaitingRequest) {
  KafkaClientOptions o;
  o.targets = {{"broker-1", 9092}, {"broker-2", 9092}};
  KafkaClientRig rig(o);
  rig.send();
  rig.send();
  rig.run();
  ASSERT_TRUE(rig.dialer->dialing());
  EXPECT_EQ(rig.dialer->targets().size(), 2u) << "every target, in order";
  rig.dialer->fail();
  EXPECT_EQ(rig.attempts_failed, 2);
  ASSERT_EQ(rig.outcomes.size(), 2u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kConnectFailed);
  EXPECT_EQ(rig.outcomes[1].error, ClientError::kConnectFailed);
  EXPECT_TRUE(rig.lost.empty()) << "no connection was up to lose";
}

TEST(KafkaClient, BrokerClosingFailsWrittenRequestsAsDisconnected) {
  KafkaClientRig rig;
  rig.send();
  rig.connect();
  ASSERT_EQ(rig.requests().size(), 1u);
  rig.broker->peer_closes();
  rig.run();
  ASSERT_EQ(rig.outcomes.size(), 1u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kDisconnected);
  EXPECT_EQ(rig.outcomes[0].detail, kBrokerClosedDetail);
  EXPECT_EQ(rig.lost, std::vector<ClientError>{ClientError::kDisconnected});
}

TEST(KafkaClient, NextRequestAfterALostConnectionDialsAgain) {
  KafkaClientRig rig;
  rig.send();
  rig.connect();
  rig.requests();
  rig.broker->peer_closes();
  rig.run();
  ASSERT_EQ(rig.outcomes.size(), 1u);
  EXPECT_EQ(rig.dialer->dials(), 1);
  rig.send();
  rig.connect();
  EXPECT_EQ(rig.dialer->dials(), 2);
  EXPECT_EQ(rig.connected, 2);
  auto seen = rig.requests();
  ASSERT_EQ(seen.size(), 1u);
  rig.answer(seen[0].correlation_id, 9);
  ASSERT_EQ(rig.outcomes.size(), 2u);
  EXPECT_EQ(rig.outcomes[1].error, ClientError::kNone);
}

TEST(KafkaClient, ConnectWarmsAConnectionWithoutARequest) {
  KafkaClientRig rig;
  rig.client->connect();
  rig.connect();
  EXPECT_TRUE(rig.client->ready());
  EXPECT_TRUE(rig.requests().empty());
  rig.client->connect();  // connected: no second dial
  rig.run();
  EXPECT_EQ(rig.dialer->dials(), 1);
}

TEST(KafkaClient, DisconnectFailsEverythingWithoutReportingALoss) {
  KafkaClientRig rig;
  rig.send();
  rig.connect();
  rig.send();  // accepted, not yet written
  rig.client->disconnect("test says so");
  ASSERT_EQ(rig.outcomes.size(), 2u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kDisconnected);
  EXPECT_EQ(rig.outcomes[0].detail, "test says so");
  EXPECT_EQ(rig.outcomes[1].error, ClientError::kDisconnected);
  EXPECT_TRUE(rig.lost.empty()) << "the owner asked for it";
}

TEST(KafkaClient, UnsupportedVersionIsRefusedOnceTheBrokersVersionsAreKnown) {
  KafkaClientRig rig;
  SendOptions old_only;
  old_only.max_version = 2;
  EXPECT_EQ(rig.send(old_only), ClientError::kNone) << "versions not known yet";
  rig.connect(KafkaClientRig::produce_versions(3, 9));
  ASSERT_EQ(rig.outcomes.size(), 1u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kUnsupportedVersion);
  EXPECT_TRUE(rig.requests().empty()) << "nothing the broker cannot read is written";
  EXPECT_EQ(rig.send(old_only), ClientError::kUnsupportedVersion);
  EXPECT_EQ(rig.outcomes.size(), 1u);
}

TEST(KafkaClient, PostIsWrittenAndItsStrayAnswerDropped) {
  KafkaClientRig rig;
  EXPECT_EQ(rig.post(), ClientError::kNone);
  rig.send();
  rig.connect();
  EXPECT_EQ(rig.posts_written, std::vector<ClientError>{ClientError::kNone});
  auto seen = rig.requests();
  ASSERT_EQ(seen.size(), 2u);
  // A broker that answers an acks=0 Produce anyway: never taken for the
  // next request's answer.
  rig.answer(seen[0].correlation_id, 9);
  EXPECT_EQ(rig.posts_answered, 1);
  EXPECT_TRUE(rig.outcomes.empty());
  rig.answer(seen[1].correlation_id, 9);
  ASSERT_EQ(rig.outcomes.size(), 1u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kNone);
}

TEST(KafkaClient, PostNeverWrittenReportsWhy) {
  KafkaClientRig rig;
  rig.post();
  rig.run();
  rig.dialer->fail();
  EXPECT_EQ(rig.posts_written, std::vector<ClientError>{ClientError::kConnectFailed});
}

TEST(KafkaClient, RequestPastItsDeadlineWhileDialingLeavesAndTheDialGoesOn) {
  KafkaClientRig rig;
  SendOptions o;
  o.deadline_ms = 1;
  rig.send(o);
  rig.run_until_outcomes(1);
  ASSERT_EQ(rig.outcomes.size(), 1u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kTimeout);
  EXPECT_EQ(rig.outcomes[0].detail, "timed out waiting to connect");
  ASSERT_NE(rig.dialer, nullptr);
  EXPECT_TRUE(rig.dialer->dialing()) << "the connection is still wanted by the next request";
  rig.send();
  rig.connect();
  EXPECT_EQ(rig.requests().size(), 1u) << "only the request that still waits is written";
}

TEST(KafkaClient, WrittenRequestPastItsTimeoutDropsTheConnection) {
  KafkaClientRig rig;
  SendOptions quick;
  quick.timeout_ms = 1;
  rig.send(quick);
  rig.send();  // written behind it: its answer can never come in order now
  rig.connect();  // both are written (the timeout counts from there)
  rig.run_until_outcomes(2);
  ASSERT_EQ(rig.outcomes.size(), 2u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kTimeout);
  EXPECT_EQ(rig.outcomes[1].error, ClientError::kDisconnected)
      << "a hung broker holds nothing: the connection goes with the late request";
  EXPECT_EQ(rig.lost, std::vector<ClientError>{ClientError::kDisconnected});
  EXPECT_FALSE(rig.client->ready());
}

TEST(KafkaClient, CloseFailsEverythingWithClosedAndRefusesMore) {
  KafkaClientRig rig;
  rig.send();
  rig.connect();
  rig.send();
  rig.close();
  ASSERT_EQ(rig.outcomes.size(), 2u);
  EXPECT_EQ(rig.outcomes[0].error, ClientError::kClosed);
  EXPECT_EQ(rig.outcomes[1].error, ClientError::kClosed);
  EXPECT_EQ(rig.send(), ClientError::kClosed);
  rig.run(5);
  EXPECT_TRUE(rig.closed) << "once nothing of it is left on the loop";
  EXPECT_EQ(rig.outcomes.size(), 2u);
}

}  // namespace
}  // namespace epochgate::proxy::testing
