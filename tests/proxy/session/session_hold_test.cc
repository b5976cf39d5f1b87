// tests/proxy/session/session_hold_test.cc: when the policy holds a request for a
// metadata refresh, it and every request behind it wait (per-partition order,
// idempotent sequences), are offered again shortly, and leave in the
// client's order once released; a hold never outlasts policy.hold_timeout_ms.
// The policy is a scripted FencingHooks; the wire is the broker's view.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "codec/api_table.h"
#include "proxy/core/fencing_hooks.h"
#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

/// Holds every decided request `holds` times (or until after_hold), then forwards it.
class HoldingHooks final : public FencingHooks {
 public:
  explicit HoldingHooks(int holds) : holds_(holds) {}
  RequestPlan plan_request(const RequestInput& in) override {
    ++calls;
    if (in.after_hold) saw_after_hold = true;
    RequestPlan p;
    if (!in.after_hold && (holds_ < 0 || calls <= holds_)) p.action = RequestPlan::Action::kHold;
    return p;
  }
  void learn_response(PolicyResponse, int16_t, int32_t) override {}
  bool amend_response(InFlightEntry&, PolicyResponse, int16_t, int32_t) override {
    return false;
  }
  int calls = 0;
  bool saw_after_hold = false;

 private:
  int holds_;  // -1: hold until the session says the hold timed out
};

TEST(SessionHold, HeldRequestAndThoseBehindItWaitThenLeaveInOrder) {
  ASSERT_TRUE(codec::api_info(0)->decided.contains(7)) << "Produce v7 must be policy-decided";
  HoldingHooks hooks(2);
  SessionRig rig({}, &hooks);
  rig.connect();
  std::string produce = produce_v7(1, 1);
  std::string heartbeat = request_frame(kHeartbeat, 3, 2);
  rig.client->peer_sends(produce + heartbeat);
  rig.pump();
  EXPECT_EQ(hooks.calls, 1);
  EXPECT_EQ(rig.broker->sent(), "") << "a held request, or one behind it, went out";
  ASSERT_TRUE(rig.pump_until([&] { return rig.broker->sent().size() == produce.size() + heartbeat.size(); }));
  EXPECT_EQ(rig.broker->sent(), produce + heartbeat);
  EXPECT_EQ(hooks.calls, 3);  // held twice, forwarded the third time
  EXPECT_FALSE(hooks.saw_after_hold);
}

TEST(SessionHold, HoldEndsAtHoldTimeout) {
  HoldingHooks hooks(-1);
  config::Config cfg;
  cfg.policy.hold_timeout_ms = 60;
  SessionRig rig(cfg, &hooks);
  rig.connect();
  std::string produce = produce_v7(1, 1);
  auto start = std::chrono::steady_clock::now();
  rig.client->peer_sends(produce);
  ASSERT_TRUE(rig.pump_until([&] { return rig.broker->sent() == produce; }, 3000));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(hooks.saw_after_hold);
  EXPECT_GE(waited, std::chrono::milliseconds(60));
}

}  // namespace
}  // namespace epochgate::proxy::testing
