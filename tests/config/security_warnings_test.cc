// tests/config/security_warnings_test.cc: the settings epochgate accepts but
// says weaken security (docs/security.md), as --check-config prints them:
// each named with its key, none for a config without them.
#include "config/security_warnings.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "config/cli.h"
#include "config/loader.h"

namespace epochgate::config {
namespace {

std::vector<std::string> warnings_of(const std::string& yaml) {
  const LoadResult r = load_config_string(yaml, "test.yaml");
  EXPECT_TRUE(r.problems.empty()) << (r.problems.empty() ? "" : r.problems[0].to_string());
  return security_warnings(r.config);
}

bool mentions(const std::vector<std::string>& ws, const std::string& text) {
  for (const auto& w : ws)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

TEST(SecurityWarnings, NoneForDefaults) { EXPECT_TRUE(warnings_of("").empty()); }

TEST(SecurityWarnings, CleartextPasswordUpstream) {
  const std::string plain =
      "upstream_sasl:\n  mechanism: PLAIN\n  username: u\n  password_env: P\n";
  auto ws = warnings_of(plain);
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_TRUE(mentions(ws, "upstream_sasl.mechanism: PLAIN without upstream_tls")) << ws[0];
  EXPECT_TRUE(warnings_of(plain + "upstream_tls:\n  enabled: true\n").empty());
  EXPECT_TRUE(mentions(warnings_of("upstream_sasl:\n  mechanism: OAUTHBEARER\n  token_file: /t\n"),
                       "the bearer token"));
  // SCRAM never sends the password itself.
  EXPECT_TRUE(warnings_of("upstream_sasl:\n  mechanism: SCRAM-SHA-512\n  username: u\n"
                          "  password_env: P\n").empty());
}

TEST(SecurityWarnings, LoopbackPlaintextSkipsClientCertificates) {
  const std::string tls =
      "tls:\n  cert_file: /c\n  key_file: /k\n  client_ca_file: /ca\n  client_auth: required\n";
  EXPECT_TRUE(warnings_of(tls).empty());
  auto ws = warnings_of(tls + "  plaintext_clients: loopback\n");
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_TRUE(mentions(ws, "skips tls.client_auth (required)")) << ws[0];
}

TEST(SecurityWarnings, RemoteClientsLendingTheIdentityAreNamed) {
  auto ws = warnings_of(
      "listen: 0.0.0.0:9092\nadvertise_host: gw.example\nupstream_sasl:\n  mechanism: SCRAM-SHA-256\n  username: svc\n"
      "  password_env: P\n  on_behalf_of_clients: true\n  allow_remote_clients: true\n");
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_TRUE(mentions(ws, "every client that can reach 0.0.0.0 acts as SASL principal svc"))
      << ws[0];
}

TEST(SecurityWarnings, CheckConfigPrintsThemAndStillPasses) {
  char path[] = "/tmp/epochgate-warn-XXXXXX.yaml";
  const int fd = mkstemps(path, 5);
  ASSERT_GE(fd, 0);
  const std::string yaml = "bootstrap_servers: ['b:9092']\nupstream_sasl:\n  mechanism: PLAIN\n"
                           "  username: u\n  password_env: P\n";
  ASSERT_EQ(write(fd, yaml.data(), yaml.size()), static_cast<ssize_t>(yaml.size()));
  close(fd);
  const char* argv[] = {"epochgate", "--check-config", path};
  const CliResult r = parse_cli(3, argv, "test");
  unlink(path);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find(": OK"), std::string::npos);
  EXPECT_NE(r.errors.find(std::string(path) + ": warning: upstream_sasl.mechanism: PLAIN"),
            std::string::npos)
      << r.errors;
}

}  // namespace
}  // namespace epochgate::config
