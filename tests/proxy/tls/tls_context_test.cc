// tests/proxy/tls/tls_context_test.cc: loading the client-facing and upstream
// contexts from the openssl-made certificate set: what loads, what is
// refused (with the file and OpenSSL's reason), and what the loaded
// certificates say compared with `openssl x509`'s own reading.
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <fstream>

#include "proxy/tls/tls_context.h"
#include "tests/proxy/tls_test_support.h"

namespace epochgate::proxy::tls {
namespace {

using test::cert;

config::TlsConfig server_config(const std::string& name) {
  config::TlsConfig c;
  c.cert_file = cert(name + ".crt");
  c.key_file = cert(name + ".key");
  return c;
}

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  if (p) pclose(p);
  return out;
}

// What a security review expects by default on both sides: TLS 1.2 suites
// are forward-secret (ECDHE) and AEAD; nothing like AES128-SHA (RSA key
// exchange, CBC-SHA1) that OpenSSL's DEFAULT list would offer.
void expect_forward_secret_aead_only(SSL_CTX* ctx) {
  STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(ctx);
  int tls12 = 0;
  for (int i = 0; i < sk_SSL_CIPHER_num(all); ++i) {
    const SSL_CIPHER* c = sk_SSL_CIPHER_value(all, i);
    EXPECT_TRUE(SSL_CIPHER_is_aead(c)) << SSL_CIPHER_get_name(c);
    if (SSL_CIPHER_get_kx_nid(c) == NID_kx_any) continue;  // a TLS 1.3 suite
    ++tls12;
    EXPECT_EQ(SSL_CIPHER_get_kx_nid(c), NID_kx_ecdhe) << SSL_CIPHER_get_name(c);
  }
  EXPECT_GT(tls12, 0);
}

TEST(TlsContext, DefaultsAreForwardSecretAeadOnBothSides) {
  std::string error;
  auto server = TlsContext::build_server(server_config("server-rsa"), error);
  ASSERT_TRUE(server) << error;
  expect_forward_secret_aead_only(server->ctx());
  config::UpstreamTlsConfig u;
  u.enabled = true;
  u.ca_file = cert("ca.crt");
  auto client = TlsContext::build_client(u, error);
  ASSERT_TRUE(client) << error;
  expect_forward_secret_aead_only(client->ctx());
  EXPECT_EQ(SSL_CTX_get_min_proto_version(client->ctx()), TLS1_2_VERSION);
}

TEST(TlsContext, ConfiguredVersionAndSuitesAreUsed) {
  std::string error;
  config::TlsConfig c = server_config("server");
  c.min_version = "TLSv1.3";
  c.cipher_suites = "TLS_CHACHA20_POLY1305_SHA256";
  auto server = TlsContext::build_server(c, error);
  ASSERT_TRUE(server) << error;
  EXPECT_EQ(SSL_CTX_get_min_proto_version(server->ctx()), TLS1_3_VERSION);
  STACK_OF(SSL_CIPHER)* all = SSL_CTX_get_ciphers(server->ctx());
  bool chacha = false, aes = false;
  for (int i = 0; i < sk_SSL_CIPHER_num(all); ++i) {
    const std::string name = SSL_CIPHER_get_name(sk_SSL_CIPHER_value(all, i));
    chacha = chacha || name == "TLS_CHACHA20_POLY1305_SHA256";
    aes = aes || name == "TLS_AES_256_GCM_SHA384";
  }
  EXPECT_TRUE(chacha);
  EXPECT_FALSE(aes);
  c.cipher_list = "NO-SUCH-CIPHER";
  EXPECT_FALSE(TlsContext::build_server(c, error));
  EXPECT_NE(error.find("tls.cipher_list"), std::string::npos) << error;
}

TEST(TlsContext, ClientCertificatesTurnSessionTicketsOff) {
  std::string error;
  config::TlsConfig c = server_config("server");
  auto open = TlsContext::build_server(c, error);
  ASSERT_TRUE(open) << error;
  EXPECT_EQ(SSL_CTX_get_options(open->ctx()) & SSL_OP_NO_TICKET, 0u);
  c.client_ca_file = cert("ca.crt");
  c.client_auth = "required";
  auto mtls = TlsContext::build_server(c, error);
  ASSERT_TRUE(mtls) << error;
  EXPECT_NE(SSL_CTX_get_options(mtls->ctx()) & SSL_OP_NO_TICKET, 0u);
  EXPECT_EQ(SSL_CTX_get_num_tickets(mtls->ctx()), 0u);
  EXPECT_LE(SSL_CTX_get_timeout(mtls->ctx()), kClientAuthSessionSeconds);
}

TEST(TlsContext, ServerLoadsChainAndKey) {
  std::string error;
  auto ctx = TlsContext::build_server(server_config("server"), error);
  ASSERT_TRUE(ctx) << error;
  ASSERT_FALSE(ctx->files().empty());
  const CertFileInfo& f = ctx->files().front();
  EXPECT_EQ(f.setting, "tls.cert_file");
  EXPECT_EQ(f.certificates, 2);  // leaf then CA
  // openssl's own reading of the same file: subject and notAfter agree.
  const std::string subject = run("openssl x509 -noout -subject -nameopt RFC2253 -in " + cert("server.crt"));
  EXPECT_NE(subject.find(f.subject), std::string::npos) << subject << " vs " << f.subject;
  const std::string end = run("openssl x509 -noout -enddate -dateopt iso_8601 -in " + cert("server.leaf.crt"));
  std::tm tm{};
  ASSERT_NE(strptime(end.c_str(), "notAfter=%Y-%m-%d %H:%M:%SZ", &tm), nullptr) << end;
  EXPECT_LE(f.not_after, timegm(&tm));
  EXPECT_NE(std::find(f.dns_names.begin(), f.dns_names.end(), "localhost"), f.dns_names.end());
}

TEST(TlsContext, KeyOfAnotherCertificateIsRefusedNamingTheFile) {
  config::TlsConfig c = server_config("server");
  c.key_file = cert("client.key");
  std::string error;
  EXPECT_FALSE(TlsContext::build_server(c, error));
  EXPECT_NE(error.find("tls.key_file " + c.key_file), std::string::npos) << error;
  EXPECT_NE(error.find("does not match"), std::string::npos) << error;
  EXPECT_NE(error.find("key values mismatch"), std::string::npos) << error;  // OpenSSL's reason
}

TEST(TlsContext, MissingOrGarbledFilesAreRefusedWithTheReason) {
  config::TlsConfig c = server_config("server");
  c.cert_file = cert("nonexistent.crt");
  std::string error;
  EXPECT_FALSE(TlsContext::build_server(c, error));
  EXPECT_NE(error.find("tls.cert_file " + c.cert_file), std::string::npos) << error;
  EXPECT_NE(error.find("No such file"), std::string::npos) << error;

  const std::string garbled = cert("garbled.crt");
  std::ofstream(garbled) << "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
  c.cert_file = garbled;
  EXPECT_FALSE(TlsContext::build_server(c, error));
  EXPECT_NE(error.find(garbled), std::string::npos) << error;

  config::UpstreamTlsConfig u;
  u.enabled = true;
  u.ca_file = garbled;
  EXPECT_FALSE(TlsContext::build_client(u, error));
  EXPECT_NE(error.find("upstream_tls.ca_file " + garbled), std::string::npos) << error;
}

TEST(TlsContext, EncryptedKeyNeedsItsPasswordFile) {
  config::TlsConfig c = server_config("server");
  c.key_file = cert("server-enc.key");
  std::string error;
  EXPECT_FALSE(TlsContext::build_server(c, error));
  EXPECT_NE(error.find("key_password_file"), std::string::npos) << error;
  c.key_password_file = cert("server-key-password.txt");
  EXPECT_TRUE(TlsContext::build_server(c, error)) << error;
  const std::string wrong = cert("wrong-password.txt");
  std::ofstream(wrong) << "not the password\n";
  c.key_password_file = wrong;
  EXPECT_FALSE(TlsContext::build_server(c, error));
  EXPECT_NE(error.find("tls.key_file"), std::string::npos) << error;
}

TEST(TlsContext, ClientCaFromFileOrSecretStyleDirectory) {
  config::UpstreamTlsConfig u;
  u.enabled = true;
  u.ca_file = cert("ca.crt");
  std::string error;
  auto a = TlsContext::build_client(u, error);
  ASSERT_TRUE(a) << error;
  EXPECT_EQ(a->files().front().setting, "upstream_tls.ca_file");
  // A directory of plain PEM files, no hash links (a Kubernetes Secret mount).
  const std::string dir = cert("ca-secret");
  ASSERT_EQ(std::system(("mkdir -p " + dir + " && cp " + cert("ca.crt") + " " + dir + "/ca.crt").c_str()), 0);
  u.ca_file = dir;
  EXPECT_TRUE(TlsContext::build_client(u, error)) << error;
  u.ca_file = "";  // the system store
  EXPECT_TRUE(TlsContext::build_client(u, error)) << error;
  u.ca_file = cert("ca.crt");
  u.cert_file = cert("client.crt");
  u.key_file = cert("server.key");
  EXPECT_FALSE(TlsContext::build_client(u, error));
  EXPECT_NE(error.find("upstream_tls.key_file"), std::string::npos) << error;
}

}  // namespace
}  // namespace epochgate::proxy::tls
