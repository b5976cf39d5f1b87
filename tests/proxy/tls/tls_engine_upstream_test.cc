// tests/proxy/tls/tls_engine_upstream_test.cc: the engine as epochgate's
// upstream side against `openssl s_server` (the independent TLS server):
// a verified handshake and bytes both ways, and each refusal the issue
// lists with the reason a user sees in the metric label.
#include <gtest/gtest.h>
#include <unistd.h>

#include "proxy/tls/tls_context.h"
#include "proxy/tls/tls_engine.h"
#include "tests/proxy/tls_test_support.h"

namespace epochgate::proxy::tls {
namespace {

using test::cert;

std::shared_ptr<const TlsContext> client_ctx(bool verify_hostname = true, bool mtls = false,
                                             const std::string& ca = "ca.crt") {
  config::UpstreamTlsConfig u;
  u.enabled = true;
  u.ca_file = cert(ca);
  u.verify_hostname = verify_hostname;
  if (mtls) {
    u.cert_file = cert("client.crt");
    u.key_file = cert("client.key");
  }
  std::string error;
  auto c = TlsContext::build_client(u, error);
  EXPECT_TRUE(c) << error;
  return c;
}

test::PumpResult dial(const test::SServer& s, std::shared_ptr<const TlsContext> ctx,
                      const std::string& host, std::string* protocol = nullptr) {
  int fd = test::connect_loopback(s.port);
  EXPECT_GE(fd, 0);
  auto e = TlsEngine::client(std::move(ctx), host);
  test::PumpResult r = test::pump(*e, fd, "epochgate\n", 10);
  if (protocol) *protocol = e->protocol();
  ::close(fd);
  return r;
}

TEST(TlsUpstream, VerifiedHandshakeCarriesBytesBothWays) {
  test::SServer s("server");
  ASSERT_GT(s.port, 0) << s.child.output();
  std::string protocol;
  auto r = dial(s, client_ctx(), "localhost", &protocol);
  ASSERT_TRUE(r.handshake_done) << failure_name(r.failure) << ": " << r.detail;
  EXPECT_EQ(r.received, "etaghcope\n");  // s_server -rev's answer
  EXPECT_EQ(protocol, "TLSv1.3");         // preferred when both offer it
}

TEST(TlsUpstream, SniIsTheBrokerHost) {
  // s_server -servername_fatal refuses any other server name with a fatal alert.
  const std::vector<std::string> sni = {"-servername", "b-1.kafka.example.com", "-servername_fatal",
                                        "-cert2", cert("server.crt"), "-key2", cert("server.key")};
  test::SServer s("server", sni);
  ASSERT_GT(s.port, 0);
  auto r = dial(s, client_ctx(), "b-1.kafka.example.com");
  ASSERT_TRUE(r.handshake_done) << r.detail;
  EXPECT_EQ(r.received, "etaghcope\n");
  test::SServer other("server", sni);
  auto refused = dial(other, client_ctx(), "b-2.kafka.example.com");
  EXPECT_FALSE(refused.handshake_done);
  EXPECT_EQ(refused.failure, Failure::kPeerAlert) << refused.detail;
}

TEST(TlsUpstream, IpAddressIsCheckedAgainstIpSans) {
  test::SServer s("server");
  auto ok = dial(s, client_ctx(), "127.0.0.1");
  EXPECT_TRUE(ok.handshake_done) << ok.detail;
}

TEST(TlsUpstream, HostnameMismatch) {
  test::SServer s("wronghost", {"-naccept", "1"});
  auto r = dial(s, client_ctx(), "localhost");
  EXPECT_FALSE(r.handshake_done);
  EXPECT_EQ(r.failure, Failure::kHostnameMismatch) << r.detail;
}

TEST(TlsUpstream, VerifyHostnameFalseAcceptsAnotherHostsCertificate) {
  test::SServer s("wronghost");
  auto r = dial(s, client_ctx(false), "localhost");
  EXPECT_TRUE(r.handshake_done) << r.detail;
}

TEST(TlsUpstream, WrongCa) {
  test::SServer s("untrusted");
  auto r = dial(s, client_ctx(), "localhost");
  EXPECT_EQ(r.failure, Failure::kUnknownCa) << r.detail;
}

TEST(TlsUpstream, ExpiredAndNotYetValid) {
  test::SServer a("expired");
  EXPECT_EQ(dial(a, client_ctx(), "localhost").failure, Failure::kExpired);
  test::SServer b("notyet");
  EXPECT_EQ(dial(b, client_ctx(), "localhost").failure, Failure::kNotYetValid);
}

TEST(TlsUpstream, MutualTlsWhenTheBrokerRequiresIt) {
  test::SServer s("server", {"-Verify", "1", "-verify_return_error", "-CAfile", cert("ca.crt")});
  auto without = dial(s, client_ctx(), "localhost");
  EXPECT_FALSE(without.handshake_done && without.received == "etaghcope\n");
  EXPECT_EQ(without.failure, Failure::kPeerAlert) << failure_name(without.failure) << without.detail;
  test::SServer s2("server", {"-Verify", "1", "-verify_return_error", "-CAfile", cert("ca.crt")});
  auto with = dial(s2, client_ctx(true, true), "localhost");
  ASSERT_TRUE(with.handshake_done) << with.detail;
  EXPECT_EQ(with.received, "etaghcope\n");
  EXPECT_TRUE(s2.child.wait_for("epochgate-test-client", 2000)) << s2.child.output();
}

TEST(TlsUpstream, Tls11OnlyServerIsRefused) {
  test::SServer s("server", {"-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"});
  auto r = dial(s, client_ctx(), "localhost");
  EXPECT_FALSE(r.handshake_done);
  EXPECT_NE(r.failure, Failure::kNone);
}

TEST(TlsUpstream, PlaintextServerIsNotTls) {
  // A plaintext Kafka-like peer answering bytes that are no TLS record.
  int port = 0;
  int lfd = test::listen_loopback(port);
  int fd = test::connect_loopback(port);
  int peer = test::accept_within(lfd, 2000);
  ASSERT_GE(peer, 0);
  const uint8_t answer[] = {0, 0, 0, 8, 0, 0, 0, 1, 0, 35, 0, 0};
  ASSERT_EQ(::write(peer, answer, sizeof answer), static_cast<ssize_t>(sizeof answer));
  auto e = TlsEngine::client(client_ctx(), "localhost");
  auto r = test::pump(*e, fd, "", 0, 3000);
  EXPECT_EQ(r.failure, Failure::kNotTls) << failure_name(r.failure) << ": " << r.detail;
  ::close(fd);
  ::close(peer);
  ::close(lfd);
}

}  // namespace
}  // namespace epochgate::proxy::tls

namespace epochgate::proxy::tls {
namespace {

// A TLS 1.2 broker asking to renegotiate (s_server's `r` command sends a
// HelloRequest) is answered no_renegotiation and counted; what came before
// was carried. OpenSSL's s_server then gives up on that connection itself.
TEST(TlsUpstream, BrokerRenegotiationIsRefusedAndCounted) {
  test::Child srv({"openssl", "s_server", "-accept", "127.0.0.1:0", "-cert", cert("server.crt"),
                   "-key", cert("server.key"), "-tls1_2"});
  ASSERT_TRUE(srv.wait_for("ACCEPT 127.0.0.1:", 5000)) << srv.output();
  const std::string o = srv.output();
  const int port = std::atoi(o.c_str() + o.find("ACCEPT 127.0.0.1:") + 17);
  int fd = test::connect_loopback(port);
  ASSERT_GE(fd, 0);
  auto e = TlsEngine::client(client_ctx(), "localhost");
  test::PumpResult r = test::pump(*e, fd, "epochgate\n", 0, 5000);
  ASSERT_TRUE(r.handshake_done) << r.detail;
  EXPECT_EQ(e->protocol(), "TLSv1.2");
  ASSERT_TRUE(srv.wait_for("epochgate", 5000)) << srv.output();
  srv.write_stdin("before\n");
  r = test::pump(*e, fd, "", 7, 5000);
  EXPECT_EQ(r.received, "before\n");
  EXPECT_EQ(e->renegotiations_refused(), 0);
  srv.write_stdin("r\n");  // s_server's stdout is buffered: nothing to wait for there
  r = test::pump(*e, fd, "", 1, 3000);  // reads the HelloRequest, answers the alert
  EXPECT_EQ(e->renegotiations_refused(), 1) << srv.output();
  EXPECT_TRUE(srv.wait_for("no renegotiation", 5000)) << srv.output();
  ::close(fd);
}

}  // namespace
}  // namespace epochgate::proxy::tls
