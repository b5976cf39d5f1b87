// tests/proxy/session/session_order_test.cc: a Session between an in-memory client
// and an in-memory broker (tests/proxy/session_rig.h). The client gets its
// responses in its request order, epochgate's own answers included;
// pipelined requests all reach the broker before any answer; a broker
// answering out of order is a protocol violation that closes the client.
#include <gtest/gtest.h>

#include <string>

#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

/// Correlation ids of the size-prefixed response frames in `wire`.
std::vector<int32_t> correlation_ids(const std::string& wire) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at + 8 <= wire.size()) {
    auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(wire[i])); };
    uint32_t size = u(at) << 24 | u(at + 1) << 16 | u(at + 2) << 8 | u(at + 3);
    ids.push_back(static_cast<int32_t>(u(at + 4) << 24 | u(at + 5) << 16 | u(at + 6) << 8 | u(at + 7)));
    at += 4 + size;
  }
  return ids;
}

TEST(SessionOrder, LocalAnswerWaitsBehindAnOlderForwardedRequest) {
  SessionRig rig;
  rig.connect();
  std::string r1 = request_frame(kHeartbeat, 3, 1, "group-a");
  std::string r2 = request_frame(18, 99, 2);  // ApiVersions newer than any: answered by epochgate
  std::string r3 = request_frame(kHeartbeat, 3, 3, "group-b");
  rig.client->peer_sends(r1 + r2 + r3);
  rig.pump();
  // The broker sees the two requests it must answer, byte for byte.
  EXPECT_EQ(rig.broker->take_sent(), r1 + r3);
  // epochgate's answer to 2 is ready, but 1 is older: nothing yet.
  EXPECT_EQ(rig.client->sent(), "");
  rig.broker->peer_sends(response_frame(1, std::string(2, '\0')));
  rig.pump();
  EXPECT_EQ(correlation_ids(rig.client->sent()), (std::vector<int32_t>{1, 2}));
  rig.broker->peer_sends(response_frame(3, std::string(2, '\0')));
  rig.pump();
  EXPECT_EQ(correlation_ids(rig.client->sent()), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(rig.client->sent().substr(0, 4 + 6), response_frame(1, std::string(2, '\0')));
}

TEST(SessionOrder, PipelinedRequestsAllReachTheBrokerBeforeAnyAnswer) {
  SessionRig rig;
  rig.connect();
  std::string all, answers;
  for (int32_t c = 10; c < 15; ++c) {
    all += request_frame(kHeartbeat, 3, c, "g" + std::to_string(c));
    answers += response_frame(c, std::string(2, '\0'));
  }
  rig.client->peer_sends(all);
  rig.pump();
  EXPECT_EQ(rig.broker->take_sent(), all);
  rig.broker->peer_sends(answers);
  rig.pump();
  EXPECT_EQ(rig.client->sent(), answers);
}

TEST(SessionOrder, BrokerAnsweringOutOfOrderClosesTheClient) {
  SessionRig rig;
  rig.connect();
  rig.client->peer_sends(request_frame(kHeartbeat, 3, 1) + request_frame(kHeartbeat, 3, 2));
  rig.pump();
  rig.broker->peer_sends(response_frame(2, std::string(2, '\0')));
  ASSERT_TRUE(rig.pump_until([&] { return rig.client_closed(); }));
  EXPECT_EQ(rig.client_sent(), "") << "an answer out of order reached the client";
}

TEST(SessionOrder, NothingIsForwardedBeforeTheBrokerIsDialed) {
  SessionRig rig;
  std::string r1 = request_frame(kHeartbeat, 3, 1);
  rig.client->peer_sends(r1);
  rig.pump();
  rig.connect();  // the held request goes out once the upstream is open
  rig.pump();
  EXPECT_EQ(rig.broker->sent(), r1);
}

}  // namespace
}  // namespace epochgate::proxy::testing
