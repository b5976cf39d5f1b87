// tests/proxy/session/session_states_test.cc: the Session's named states
// (proxy/session/session.h) along its arrows: created, awaiting a node's
// address, dialing, open, closing; inside open, the intake (flowing, held,
// closing after a write); and the drain, which combines with them. Each
// transition is asserted through the state it leaves the session in and
// what the wire, the connection counts and the session's freeing show.
#include <gtest/gtest.h>

#include <string>

#include "proxy/core/fencing_hooks.h"
#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

using State = Session::State;
using Intake = Session::Intake;

TEST(SessionStates, KnownAddressDialsThenOpensOnTheBrokersAnswer) {
  SessionRig rig;
  EXPECT_EQ(rig.session().state(), State::kDialing);
  EXPECT_EQ(rig.session().upstream_connections(), 1) << "a dial counts as an upstream connection";
  rig.connect();
  EXPECT_EQ(rig.session().state(), State::kOpen);
  EXPECT_EQ(rig.session().intake(), Intake::kFlowing);
  EXPECT_EQ(rig.session().upstream_connections(), 1);
}

TEST(SessionStates, UnknownAddressWaitsForARefreshThenDials) {
  SessionRig rig({}, nullptr, nullptr, false, /*address_known=*/false);
  EXPECT_EQ(rig.session().state(), State::kAwaitingAddress);
  EXPECT_EQ(rig.directory().refreshes, 1) << "the session did not ask for the node's address";
  EXPECT_EQ(rig.session().upstream_connections(), 0);
  EXPECT_EQ(rig.dialer()->dials(), 0);
  rig.directory().address_known = true;  // the refresh answered
  ASSERT_TRUE(rig.pump_until([&] { return rig.session().state() == State::kDialing; }));
  EXPECT_EQ(rig.dialer()->dials(), 1);
  rig.connect();
  EXPECT_EQ(rig.session().state(), State::kOpen);
}

TEST(SessionStates, AddressNeverLearntClosesAtTheConnectTimeout) {
  config::Config cfg;
  cfg.limits.upstream_connect_timeout_ms = 50;
  SessionRig rig(cfg, nullptr, nullptr, false, /*address_known=*/false);
  ASSERT_EQ(rig.session().state(), State::kAwaitingAddress);
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); }, 3000))
      << "a session waiting for an address nobody learns never ends";
}

TEST(SessionStates, EveryTargetFailingClosesAndFreesTheSession) {
  SessionRig rig;
  rig.dialer()->fail();
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); }));
}

TEST(SessionStates, CloseWhileDialingCountsTheDialUntilTheDialerIsReleased) {
  SessionRig rig;
  rig.session().close(CloseReason::kShutdown);
  EXPECT_EQ(rig.session().state(), State::kClosing);
  EXPECT_EQ(rig.session().upstream_connections(), 1)
      << "a dialer still closing may hold a socket";
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); })) << "the session was never freed";
}

/// Holds the first decided request once, then forwards.
class HoldOnceHooks final : public FencingHooks {
 public:
  RequestPlan plan_request(const RequestInput&) override {
    RequestPlan p;
    if (++calls == 1) p.action = RequestPlan::Action::kHold;
    return p;
  }
  void learn_response(PolicyResponse, int16_t, int32_t) override {}
  bool amend_response(InFlightEntry&, PolicyResponse, int16_t, int32_t) override { return false; }
  int calls = 0;
};

TEST(SessionStates, HeldRequestHoldsTheIntakeUntilTheHoldTimerOffersItAgain) {
  HoldOnceHooks hooks;
  SessionRig rig({}, &hooks);
  rig.connect();
  const std::string produce = produce_v7(1, 1);
  rig.client->peer_sends(produce);
  rig.pump(1);
  EXPECT_EQ(rig.session().intake(), Intake::kHeld);
  EXPECT_EQ(rig.broker->sent(), "");
  ASSERT_TRUE(rig.pump_until([&] { return rig.broker->sent() == produce; }));
  EXPECT_EQ(rig.session().intake(), Intake::kFlowing);
}

/// Forwards every decided request, then closes once it is written (an acks=0
/// Produce with good and stale partitions).
class ForwardThenCloseHooks final : public FencingHooks {
 public:
  RequestPlan plan_request(const RequestInput&) override {
    RequestPlan p;
    p.action = RequestPlan::Action::kForwardThenClose;
    p.frame = frame;
    p.reason = "stale partitions";
    return p;
  }
  void learn_response(PolicyResponse, int16_t, int32_t) override {}
  bool amend_response(InFlightEntry&, PolicyResponse, int16_t, int32_t) override { return false; }
  std::vector<uint8_t> frame;
};

TEST(SessionStates, ForwardThenCloseStopsTheIntakeAndClosesOnceTheBytesAreWritten) {
  ForwardThenCloseHooks hooks;
  SessionRig rig({}, &hooks);
  rig.connect();
  std::string wire;  // what the broker got, readable after the session freed its side
  rig.broker->sent_log = &wire;
  rig.broker->set_try_write_limit(0);
  rig.broker->set_auto_complete(false);
  const std::string produce = produce_v7(1, 0);
  hooks.frame.assign(produce.begin(), produce.end());
  rig.client->peer_sends(produce + request_frame(kHeartbeat, 3, 2));
  rig.pump(1);
  ASSERT_TRUE(rig.alive());
  EXPECT_EQ(rig.session().state(), State::kOpen);
  EXPECT_EQ(rig.session().intake(), Intake::kClosingAfterWrite);
  ASSERT_TRUE(rig.broker->write_in_flight());
  rig.broker->complete_write();
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); }));
  EXPECT_EQ(wire, produce) << "the request behind it went out";
}

TEST(SessionStates, ForwardThenCloseEndsAtTheWriteDeadlineWhenTheBrokerNeverReads) {
  ForwardThenCloseHooks hooks;
  config::Config cfg;
  cfg.limits.upstream_connect_timeout_ms = 50;
  SessionRig rig(cfg, &hooks);
  rig.connect();
  rig.broker->set_try_write_limit(0);
  rig.broker->set_auto_complete(false);
  const std::string produce = produce_v7(1, 0);
  hooks.frame.assign(produce.begin(), produce.end());
  rig.client->peer_sends(produce);
  rig.pump(1);
  ASSERT_EQ(rig.session().intake(), Intake::kClosingAfterWrite);
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); }, 3000))
      << "a broker that never reads keeps the session open";
}

TEST(SessionStates, DrainWithNothingOwedClosesAtOnce) {
  SessionRig rig;
  rig.connect();
  rig.session().begin_drain();
  EXPECT_EQ(rig.session().state(), State::kClosing);
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); }));
}

TEST(SessionStates, DrainWaitsForTheAnswerOwedAndTakesNoNewRequest) {
  SessionRig rig;
  rig.connect();
  const std::string first = request_frame(kHeartbeat, 3, 1);
  rig.client->peer_sends(first);
  rig.pump();
  ASSERT_EQ(rig.broker->sent(), first);
  rig.session().begin_drain();
  EXPECT_EQ(rig.session().state(), State::kOpen);
  rig.client->peer_sends(request_frame(kHeartbeat, 3, 2));
  rig.pump();
  EXPECT_EQ(rig.broker->sent(), first) << "a draining session took a new request";
  const std::string answer = response_frame(1, std::string(2, '\0'));
  rig.broker->peer_sends(answer);
  EXPECT_TRUE(rig.pump_until([&] { return !rig.alive(); }));
  EXPECT_EQ(rig.client_sent(), answer);
}

}  // namespace
}  // namespace epochgate::proxy::testing
