// tests/proxy/client/scram_nonce_test.cc: a SCRAM login never goes out
// without a random client nonce. OpenSSL's RAND_bytes can fail (no entropy
// source, a broken provider); the nonce is then empty and the login fails
// with a reason instead of sending a predictable "r=".
#include <openssl/rand.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "proxy/client/sasl_login.h"
#include "proxy/client/sasl_scram.h"

// RAND_set_rand_method is deprecated in OpenSSL 3 but still the one way to
// make RAND_bytes fail on demand; the test restores the method it replaced.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace epochgate::proxy {
namespace {

int failing_bytes(unsigned char*, int) { return 0; }
int failing_status() { return 0; }

/// Makes RAND_bytes fail while in scope.
class FailingRand {
 public:
  FailingRand() : saved_(RAND_get_rand_method()) {
    method_.bytes = failing_bytes;
    method_.pseudorand = failing_bytes;
    method_.status = failing_status;
    RAND_set_rand_method(&method_);
  }
  ~FailingRand() { RAND_set_rand_method(saved_); }

 private:
  const RAND_METHOD* saved_;
  RAND_METHOD method_{};
};

// A SaslHandshake v1 answer (header v0, no size prefix) offering `mechanism`.
std::vector<uint8_t> handshake_answer(int32_t correlation_id, const std::string& mechanism) {
  std::vector<uint8_t> f;
  auto be = [&f](uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) f.push_back(static_cast<uint8_t>(v >> (8 * i)));
  };
  be(static_cast<uint32_t>(correlation_id), 4);
  be(0, 2);  // ErrorCode NONE
  be(1, 4);  // one mechanism
  be(mechanism.size(), 2);
  f.insert(f.end(), mechanism.begin(), mechanism.end());
  return f;
}

TEST(ScramNonce, IsEmptyWhenRandBytesFails) {
  EXPECT_FALSE(ScramClient::random_nonce().empty());
  {
    FailingRand broken;
    EXPECT_TRUE(ScramClient::random_nonce().empty());
  }
  EXPECT_FALSE(ScramClient::random_nonce().empty());
}

TEST(ScramNonce, LoginFailsWithAReasonInsteadOfSendingNoNonce) {
  ::setenv("EPOCHGATE_TEST_SCRAM_PASSWORD", "secret", 1);
  config::UpstreamSaslConfig c;
  c.mechanism = "SCRAM-SHA-256";
  c.username = "alice";
  c.password_env = "EPOCHGATE_TEST_SCRAM_PASSWORD";
  SaslLogin login(c);
  SaslLoginStep first = login.start(7);
  ASSERT_EQ(first.kind, SaslLoginStep::Kind::kSend) << first.error;
  const std::vector<uint8_t> answer = handshake_answer(7, "SCRAM-SHA-256");
  SaslLoginStep next;
  {
    FailingRand broken;
    next = login.on_response(answer.data(), answer.size(), 8);
  }
  EXPECT_EQ(next.kind, SaslLoginStep::Kind::kFailed);
  EXPECT_NE(next.error.find("RAND_bytes"), std::string::npos) << next.error;
  EXPECT_TRUE(next.frame.empty());
}

}  // namespace
}  // namespace epochgate::proxy
