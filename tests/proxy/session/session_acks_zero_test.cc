// tests/proxy/session/session_acks_zero_test.cc: a Produce with acks=0 owes the
// client nothing (Kafka protocol: the broker sends no response). epochgate
// forwards it, never answers it, and drops an answer a broker sends anyway
// (the librdkafka mock cluster does) so the client never sees an unexpected
// correlation id; requests behind it are answered as usual.
#include <gtest/gtest.h>

#include <string>

#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

const std::string kProduceAnswer = std::string(8, '\0');  // topics [], throttle 0

TEST(SessionAcksZero, ForwardedNeverAnsweredAndABrokersAnswerDropped) {
  SessionRig rig;
  rig.connect();
  std::string produce = produce_v7(1, 0);
  std::string heartbeat = request_frame(kHeartbeat, 3, 2);
  rig.client->peer_sends(produce + heartbeat);
  rig.pump();
  EXPECT_EQ(rig.broker->take_sent(), produce + heartbeat);
  rig.broker->peer_sends(response_frame(1, kProduceAnswer));  // a mock's answer
  rig.broker->peer_sends(response_frame(2, std::string(2, '\0')));
  rig.pump();
  EXPECT_EQ(rig.client->sent(), response_frame(2, std::string(2, '\0')));
  EXPECT_TRUE(rig.alive());
}

TEST(SessionAcksZero, RealBrokerSilenceDoesNotBlockLaterAnswers) {
  SessionRig rig;
  rig.connect();
  rig.client->peer_sends(produce_v7(1, 0) + produce_v7(2, 0) + request_frame(kHeartbeat, 3, 3));
  rig.pump();
  rig.broker->peer_sends(response_frame(3, std::string(2, '\0')));
  rig.pump();
  EXPECT_EQ(rig.client->sent(), response_frame(3, std::string(2, '\0')));
}

TEST(SessionAcksZero, AcksOneIsAnswered) {
  SessionRig rig;
  rig.connect();
  rig.client->peer_sends(produce_v7(1, 1));
  rig.pump();
  rig.broker->peer_sends(response_frame(1, kProduceAnswer));
  rig.pump();
  EXPECT_EQ(rig.client->sent(), response_frame(1, kProduceAnswer));
}

}  // namespace
}  // namespace epochgate::proxy::testing
