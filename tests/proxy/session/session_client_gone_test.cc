// tests/proxy/session/session_client_gone_test.cc: a client that leaves with its
// request still owed takes everything its session held with it, at once,
// whatever the upstream is doing: while the upstream is still dialed (the
// client's FIN or RST comes right behind its request) and with the request
// forwarded and unanswered. Requests read while dialing still go out, in
// order, once the broker has answered the dial.
#include <gtest/gtest.h>

#include <string>

#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

TEST(SessionClientGone, LeavingWhileTheUpstreamIsDialedFreesTheSessionAtOnce) {
  SessionRig rig;
  rig.client->peer_sends(request_frame(kHeartbeat, 3, 1));
  rig.client->peer_closes();
  rig.pump();
  EXPECT_FALSE(rig.alive()) << "the session waits for the dial of a client that has gone";
}

TEST(SessionClientGone, LeavingWithARequestUnansweredUpstreamFreesTheSessionAtOnce) {
  SessionRig rig;
  rig.connect();
  const std::string request = request_frame(kHeartbeat, 3, 7);
  rig.client->peer_sends(request);
  rig.pump();
  ASSERT_EQ(rig.broker->sent(), request);
  rig.client->peer_closes();
  rig.pump();
  EXPECT_FALSE(rig.alive()) << "the session waits for the broker's answer to a client that has gone";
}

TEST(SessionClientGone, RequestsReadWhileDialingGoOutInOrderOnceDialed) {
  SessionRig rig;
  const std::string first = request_frame(kHeartbeat, 3, 1);
  const std::string second = request_frame(kHeartbeat, 3, 2);
  rig.client->peer_sends(first);
  rig.pump();
  rig.client->peer_sends(second);  // the client pipelines while epochgate dials
  rig.pump();
  rig.connect();
  ASSERT_TRUE(rig.pump_until([&] { return rig.broker->sent().size() == first.size() + second.size(); }));
  EXPECT_EQ(rig.broker->sent(), first + second);
  const std::string answers =
      response_frame(1, std::string(2, '\0')) + response_frame(2, std::string(2, '\0'));
  rig.broker->peer_sends(answers);
  ASSERT_TRUE(rig.pump_until([&] { return rig.client->sent().size() == answers.size(); }));
  EXPECT_EQ(rig.client->sent(), answers);
}

}  // namespace
}  // namespace epochgate::proxy::testing
