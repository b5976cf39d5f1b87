// tests/proxy/tls/tls_engine_client_side_test.cc: the engine as epochgate's
// client-facing side against `openssl s_client` (the independent TLS
// client): what the client verifies, client_auth, plaintext bytes on the
// TLS port, and SNI routing by the ClientHello's server name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include "proxy/tls/sni_names.h"
#include "proxy/tls/tls_context.h"
#include "proxy/tls/tls_engine.h"
#include "tests/proxy/tls_test_support.h"

namespace epochgate::proxy::tls {
namespace {

using test::cert;

std::shared_ptr<const TlsContext> server_ctx(const std::string& auth = "none") {
  config::TlsConfig c;
  c.cert_file = cert("server.crt");
  c.key_file = cert("server.key");
  if (auth != "none") {
    c.client_ca_file = cert("ca.crt");
    c.client_auth = auth;
  }
  std::string error;
  auto ctx = TlsContext::build_server(c, error);
  EXPECT_TRUE(ctx) << error;
  return ctx;
}

struct Accepted {
  test::PumpResult result;
  std::string client_output;
  int client_exit = -1;
  std::optional<int32_t> node;
  std::string peer_subject;
};

Accepted serve(std::shared_ptr<const TlsContext> ctx, std::vector<std::string> client_args,
               TlsEngine::SniRoute route = nullptr, TlsEngine::NodeExists exists = nullptr) {
  int port = 0;
  int lfd = test::listen_loopback(port);
  std::vector<std::string> argv = {"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(port),
                                   "-CAfile", cert("ca.crt"), "-verify_return_error", "-quiet"};
  argv.insert(argv.end(), client_args.begin(), client_args.end());
  test::Child client(argv);
  client.write_stdin("kafka\n");
  Accepted a;
  int fd = test::accept_within(lfd, 5000);
  EXPECT_GE(fd, 0);
  auto e = TlsEngine::server(std::move(ctx), std::move(route), std::move(exists));
  a.result = test::pump(*e, fd, "answer\n", 6, 5000);
  a.node = e->routed_node();
  a.peer_subject = e->peer_subject();
  e->shutdown();
  uint8_t buf[4096];
  while (size_t n = e->take_output(buf, sizeof buf)) (void)!::write(fd, buf, n);
  client.close_stdin();
  a.client_exit = client.wait_exit(3000);
  a.client_output = client.output();
  ::close(fd);
  ::close(lfd);
  return a;
}

TEST(TlsClientSide, ClientVerifiesEpochgateAndBytesFlow) {
  auto a = serve(server_ctx(), {"-verify_hostname", "localhost"});
  ASSERT_TRUE(a.result.handshake_done) << a.result.detail << a.client_output;
  EXPECT_EQ(a.result.received, "kafka\n");
  EXPECT_NE(a.client_output.find("answer"), std::string::npos) << a.client_output;
}

TEST(TlsClientSide, RequiredClientCertificateMissing) {
  auto a = serve(server_ctx("required"), {});
  EXPECT_FALSE(a.result.handshake_done && !a.result.received.empty());
  EXPECT_EQ(a.result.failure, Failure::kNoClientCertificate) << failure_name(a.result.failure)
                                                             << ": " << a.result.detail;
}

TEST(TlsClientSide, RequiredClientCertificatePresented) {
  auto a = serve(server_ctx("required"), {"-cert", cert("client.crt"), "-key", cert("client.key")});
  ASSERT_TRUE(a.result.handshake_done) << a.result.detail;
  EXPECT_NE(a.peer_subject.find("epochgate-test-client"), std::string::npos) << a.peer_subject;
}

TEST(TlsClientSide, UntrustedClientCertificateIsRefused) {
  auto a = serve(server_ctx("requested"),
                 {"-cert", cert("untrusted-client.crt"), "-key", cert("untrusted-client.key")});
  EXPECT_EQ(a.result.failure, Failure::kUnknownCa) << failure_name(a.result.failure) << a.result.detail;
}

TEST(TlsClientSide, RequestedAllowsNoCertificate) {
  auto a = serve(server_ctx("requested"), {});
  EXPECT_TRUE(a.result.handshake_done) << a.result.detail;
  EXPECT_EQ(a.result.received, "kafka\n");
}

TEST(TlsClientSide, PlaintextKafkaRequestOnTheTlsPort) {
  int port = 0;
  int lfd = test::listen_loopback(port);
  int c = test::connect_loopback(port);
  int fd = test::accept_within(lfd, 2000);
  // ApiVersions v0 as a plaintext Kafka client sends it.
  const uint8_t req[] = {0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0};
  ASSERT_EQ(::write(c, req, sizeof req), static_cast<ssize_t>(sizeof req));
  auto e = TlsEngine::server(server_ctx());
  auto r = test::pump(*e, fd, "", 0, 2000);
  EXPECT_EQ(r.failure, Failure::kNotTls) << r.detail;
  ::close(c);
  ::close(fd);
  ::close(lfd);
}

TEST(TlsClientSide, SniRoutesByServerName) {
  SniNames names("b-$(nodeId).kafka.example.com", "bootstrap.kafka.example.com", "127.0.0.1");
  auto route = [&](std::string_view n) { return names.node_of(n); };
  auto a = serve(server_ctx(), {"-servername", "b-7.kafka.example.com"}, route);
  ASSERT_TRUE(a.result.handshake_done) << a.result.detail;
  EXPECT_EQ(a.node, 7);
  auto b = serve(server_ctx(), {"-servername", "bootstrap.kafka.example.com"}, route);
  EXPECT_EQ(b.node, kSniBootstrapNode);
  auto n = serve(server_ctx(), {"-noservername"}, route);
  EXPECT_EQ(n.node, kSniBootstrapNode);
}

TEST(TlsClientSide, UnknownServerNameFailsTheHandshake) {
  SniNames names("b-$(nodeId).kafka.example.com", "", "127.0.0.1");
  auto a = serve(server_ctx(), {"-servername", "evil.kafka.example.com"},
                 [&](std::string_view n) { return names.node_of(n); });
  EXPECT_FALSE(a.result.handshake_done);
  EXPECT_EQ(a.result.failure, Failure::kUnknownServerName);
  EXPECT_NE(a.result.detail.find("evil.kafka.example.com"), std::string::npos) << a.result.detail;
  EXPECT_NE(a.client_output.find("unrecognized name"), std::string::npos) << a.client_output;
}

TEST(TlsClientSide, PatternNameOfANodeTheClusterLacksFailsTheHandshake) {
  SniNames names("b-$(nodeId).kafka.example.com", "bootstrap.kafka.example.com", "127.0.0.1");
  std::set<int32_t> nodes = {1, 2, 3};
  auto route = [&](std::string_view n) { return names.node_of(n); };
  auto exists = [&](int32_t id) { return nodes.count(id) > 0; };
  auto a = serve(server_ctx(), {"-servername", "b-99.kafka.example.com"}, route, exists);
  EXPECT_FALSE(a.result.handshake_done);
  EXPECT_EQ(a.result.failure, Failure::kUnknownNode);
  EXPECT_FALSE(a.node.has_value());
  EXPECT_NE(a.result.detail.find("b-99.kafka.example.com"), std::string::npos) << a.result.detail;
  EXPECT_NE(a.result.detail.find("node 99"), std::string::npos) << a.result.detail;
  EXPECT_NE(a.client_output.find("unrecognized name"), std::string::npos) << a.client_output;
  // The bootstrap is no node: it stays reachable.
  auto b = serve(server_ctx(), {"-servername", "bootstrap.kafka.example.com"}, route, exists);
  ASSERT_TRUE(b.result.handshake_done) << b.result.detail;
  EXPECT_EQ(b.node, kSniBootstrapNode);
  // A node the metadata gains later routes from the next handshake on.
  nodes.insert(99);
  auto c = serve(server_ctx(), {"-servername", "b-99.kafka.example.com"}, route, exists);
  ASSERT_TRUE(c.result.handshake_done) << c.result.detail;
  EXPECT_EQ(c.node, 99);
}

TEST(TlsClientSide, Tls11ClientIsRefused) {
  auto a = serve(server_ctx(), {"-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"});
  EXPECT_FALSE(a.result.handshake_done);
  EXPECT_EQ(a.result.failure, Failure::kProtocol) << a.result.detail;
}

}  // namespace
}  // namespace epochgate::proxy::tls
