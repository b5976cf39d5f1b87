// tests/proxy/session/session_probe_test.cc: whether a session's upstream
// connection starts with epochgate's own ApiVersions probe. A Kafka SASL
// listener takes exactly one ApiVersions before SaslHandshake and closes the
// connection at a second, so when clients log in to the brokers themselves
// their own ApiVersions must be the first request the broker reads.
#include <gtest/gtest.h>

#include <string>

#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

constexpr int16_t kApiVersions = 18;

TEST(SessionProbe, DialsProbeTheBrokerByDefault) {
  SessionRig rig;
  EXPECT_TRUE(rig.dial_probes());
}

TEST(SessionProbe, ClientsLoggingInThemselvesGetTheFirstApiVersions) {
  SessionRig rig({}, nullptr, nullptr, /*clients_log_in=*/true);
  EXPECT_FALSE(rig.dial_probes()) << "a SASL listener would close the client's ApiVersions after the probe";
  rig.connect();
  const std::string api_versions = request_frame(kApiVersions, 0, 1);
  rig.client->peer_sends(api_versions);
  ASSERT_TRUE(rig.pump_until([&] { return rig.broker->sent().size() >= api_versions.size(); }));
  EXPECT_EQ(rig.broker->sent(), api_versions);
}

}  // namespace
}  // namespace epochgate::proxy::testing
