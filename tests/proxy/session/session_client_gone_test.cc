// tests/proxy/session/session_client_gone_test.cc: a client's end of stream
// right behind its requests is a half-close as far as epochgate can tell
// (shutdown(SHUT_WR)), and Kafka's brokers answer those requests before they
// close: so the session answers them, while dialing too, then frees
// everything; with nothing owed it frees everything at once. Requests read
// while dialing still go out, in order, once the broker has answered the dial.
// After an acks=0 Produce the client's end of stream is passed on to the
// broker, and the broker's own ends the session. A broker that never answers
// holds it for drain_timeout_ms at most.
#include <gtest/gtest.h>

#include <string>

#include "proxy/net/buffer_budget.h"
#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

// Once everything is answered the session passes the client's end of stream
// on to the broker (shutdown(SHUT_WR)) and ends with the broker's: true when
// it did so and then freed itself.
::testing::AssertionResult ends_with_the_brokers_end_of_stream(SessionRig& rig) {
  if (!rig.pump_until([&] { return !rig.alive() || rig.broker->shut_down(); }))
    return ::testing::AssertionFailure() << "the end of stream was not passed on to the broker";
  if (!rig.alive()) return ::testing::AssertionFailure() << "closed before the broker's FIN";
  rig.pump();
  if (!rig.alive()) return ::testing::AssertionFailure() << "closed before the broker's FIN";
  rig.broker->peer_closes();
  if (!rig.pump_until([&] { return !rig.alive(); }))
    return ::testing::AssertionFailure() << "still open after the broker's FIN";
  return ::testing::AssertionSuccess();
}

TEST(SessionClientGone, LeavingWithNothingAskedFreesTheSessionAtOnce) {
  SessionRig rig;
  rig.client->peer_sends(request_frame(kHeartbeat, 3, 1).substr(0, 9));  // a frame cut short
  rig.client->peer_closes();
  rig.pump();
  EXPECT_FALSE(rig.alive()) << "the session waits for the dial of a client that asked nothing";
}

TEST(SessionClientGone, AnEndOfStreamBehindAForwardedRequestIsAnsweredThenTheSessionCloses) {
  SessionRig rig;
  rig.connect();
  const std::string request = request_frame(kHeartbeat, 3, 7);
  rig.client->peer_sends(request);
  rig.pump();
  ASSERT_EQ(rig.broker->sent(), request);
  rig.client->peer_closes();
  rig.pump();
  ASSERT_TRUE(rig.alive()) << "a half-closed client's request was dropped (Kafka answers it)";
  const std::string answer = response_frame(7, std::string(2, '\0'));
  rig.broker->peer_sends(answer);
  ASSERT_TRUE(rig.pump_until([&] { return !rig.alive(); })) << "still open after the answers";
  EXPECT_EQ(rig.client_sent(), answer);
}

TEST(SessionClientGone, AnEndOfStreamWhileDialingIsAnsweredOnceDialed) {
  SessionRig rig;
  const std::string first = request_frame(kHeartbeat, 3, 1);
  const std::string second = request_frame(kHeartbeat, 3, 2);
  rig.client->peer_sends(first + second + first.substr(0, 6));  // and a frame cut short
  rig.client->peer_closes();
  rig.pump();
  ASSERT_TRUE(rig.alive()) << "requests sent before the end of stream were dropped";
  rig.connect();
  ASSERT_TRUE(rig.pump_until([&] { return rig.broker->sent().size() == first.size() + second.size(); }));
  EXPECT_EQ(rig.broker->sent(), first + second);
  const std::string answers =
      response_frame(1, std::string(2, '\0')) + response_frame(2, std::string(2, '\0'));
  rig.broker->peer_sends(answers);
  ASSERT_TRUE(rig.pump_until([&] { return !rig.alive(); })) << "still open after the answers";
  EXPECT_EQ(rig.client_sent(), answers);
}

// A config with `drain_timeout_ms`, and a session opened on it whose client
// sent one request (forwarded) and then its end of stream.
config::Config with_drain_timeout(uint32_t ms) {
  config::Config cfg;
  cfg.drain_timeout_ms = ms;
  return cfg;
}
void request_then_end_of_stream(SessionRig& rig) {
  rig.connect();
  rig.client->peer_sends(request_frame(kHeartbeat, 3, 7));
  rig.pump();
  rig.client->peer_closes();
  rig.pump();
}

TEST(SessionClientGone, AnswersOwedAfterTheEndOfStreamAreBoundedByTheDrainTimeout) {
  SessionRig rig(with_drain_timeout(150));
  request_then_end_of_stream(rig);
  ASSERT_TRUE(rig.alive()) << "a half-closed client's request was dropped (Kafka answers it)";
  // The broker never answers: the session closes on the bound, not never.
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); }, 2000))
      << "still open 2 s after the end of stream with a 150 ms drain timeout";
}

TEST(SessionClientGone, AnEndOfStreamWhileDialingIsBoundedByTheDrainTimeout) {
  SessionRig rig(with_drain_timeout(150));
  rig.client->peer_sends(request_frame(kHeartbeat, 3, 1));
  rig.client->peer_closes();
  rig.pump();
  ASSERT_TRUE(rig.alive());
  // The dial never completes.
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); }, 2000))
      << "a dial that never completes kept a half-closed session open";
}

TEST(SessionClientGone, ADrainTimeoutOfZeroClosesAtTheEndOfStream) {
  SessionRig rig(with_drain_timeout(0));
  request_then_end_of_stream(rig);
  EXPECT_FALSE(rig.alive()) << "drain_timeout_ms 0 answers nothing after the end of stream";
}

// Reads never restart after the end of stream, so a budget pause that ends
// offers the waiting request through the session's own re-offer, not a read.
TEST(SessionClientGone, ARequestWaitingOutABudgetPauseAfterTheEndOfStreamIsAnswered) {
  BufferBudget budget(1u << 20);
  others_hold_more_than(budget);
  {
    SessionRig rig(config::Config{}, nullptr, &budget);
    const std::string request = request_frame(kHeartbeat, 3, 7);
    rig.client->peer_sends(request);
    rig.client->peer_closes();
    rig.pump();
    rig.connect();
    rig.pump();
    ASSERT_EQ(rig.broker->sent(), "") << "forwarded while over the budget";
    ASSERT_TRUE(rig.alive());
    budget.add(-(2 << 20));
    rig.session().recheck_budget();  // what the worker's budget timer does
    ASSERT_TRUE(rig.pump_until([&] { return rig.broker->sent() == request; }))
        << "the request read before the end of stream stayed unsent after the pause";
    const std::string answer = response_frame(7, std::string(2, '\0'));
    rig.broker->peer_sends(answer);
    ASSERT_TRUE(rig.pump_until([&] { return !rig.alive(); })) << "still open after the answers";
    EXPECT_EQ(rig.client_sent(), answer);
  }
}

// Reads paused at the in-flight limit never read the FIN; the worker's sweep
// sees it in the socket's state. It is a half-close too: the requests before
// it are answered, in order, then the session closes.
TEST(SessionClientGone, AFinSeenWhileReadsArePausedIsAnsweredAsAHalfClose) {
  config::Config cfg;
  cfg.limits.max_in_flight_per_connection = 1;
  SessionRig rig(cfg);
  rig.connect();
  const std::string first = request_frame(kHeartbeat, 3, 1);
  const std::string second = request_frame(kHeartbeat, 3, 2);
  rig.client->peer_sends(first + second);
  rig.pump();
  ASSERT_EQ(rig.broker->sent(), first);
  rig.client->peer_closes();
  rig.pump();
  ASSERT_FALSE(rig.session().close_if_client_gone()) << "a FIN behind paused reads dropped "
                                                        "the requests before it";
  const std::string a1 = response_frame(1, std::string(2, '\0'));
  const std::string a2 = response_frame(2, std::string(2, '\0'));
  rig.broker->peer_sends(a1);
  ASSERT_TRUE(rig.pump_until([&] { return rig.broker->sent() == first + second; }));
  rig.broker->peer_sends(a2);
  ASSERT_TRUE(rig.pump_until([&] { return !rig.alive(); })) << "still open after the answers";
  EXPECT_EQ(rig.client_sent(), a1 + a2);
}

// An acks=0 Produce is owed no answer, but its bytes are owed to the broker,
// which may still be working on it: the session writes them, passes the end
// of stream on and ends with the broker's.
TEST(SessionClientGone, AnAcksZeroProduceBeforeTheEndOfStreamReachesTheBroker) {
  SessionRig rig;
  rig.connect();
  std::string broker_got;  // kept past the session's end (the fake goes with it)
  rig.broker->sent_log = &broker_got;
  rig.broker->set_try_write_limit(0);
  rig.broker->set_auto_complete(false);
  const std::string produce = produce_v7(1, 0);
  rig.client->peer_sends(produce);
  rig.client->peer_closes();
  rig.pump();
  ASSERT_TRUE(rig.alive()) << "closed with the Produce still queued to the broker";
  rig.broker->complete_write(0);
  ASSERT_TRUE(ends_with_the_brokers_end_of_stream(rig));
  EXPECT_EQ(broker_got, produce);
}

// A reset after the half-close: nothing written reaches the client, so the
// sweep frees the session at once rather than at the drain bound.
TEST(SessionClientGone, AResetAfterTheEndOfStreamFreesTheSession) {
  SessionRig rig;
  rig.connect();
  rig.client->peer_sends(request_frame(kHeartbeat, 3, 7));
  rig.client->peer_closes();
  rig.pump();
  ASSERT_TRUE(rig.alive());
  rig.client->peer_resets();
  EXPECT_TRUE(rig.session().close_if_client_gone());
  rig.pump();
  EXPECT_FALSE(rig.alive());
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
