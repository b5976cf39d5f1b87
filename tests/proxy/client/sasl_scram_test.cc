// tests/proxy/client/sasl_scram_test.cc: epochgate's SCRAM client against the
// published test vectors (RFC 5802 section 5 for SHA-1, RFC 7677 section 3
// for SHA-256) and, for SHA-512 (no RFC vector), against the messages
// kafka-python 2.0.2's independent ScramClient computes for the same inputs.
#include "proxy/client/sasl_scram.h"
#include "proxy/client/sasl_scram_cache.h"

#include <gtest/gtest.h>

namespace epochgate::proxy {
namespace {

TEST(ScramClient, Rfc5802Sha1Vector) {
  ScramClient c(ScramHash::kSha1, "user", "pencil", "fyko+d2lbbFgONRv9qkxdawL");
  EXPECT_EQ(c.client_first(), "n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL");
  std::string final_message, error;
  ASSERT_TRUE(c.client_final(
      "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096", final_message,
      error)) << error;
  EXPECT_EQ(final_message,
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=");
  EXPECT_TRUE(c.verify_server_final("v=rmF9pqV8S7suAoZWja4dJRkFsKQ=", error)) << error;
}

TEST(ScramClient, Rfc7677Sha256Vector) {
  ScramClient c(ScramHash::kSha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
  EXPECT_EQ(c.client_first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  std::string final_message, error;
  ASSERT_TRUE(c.client_final(
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
      final_message, error)) << error;
  EXPECT_EQ(final_message,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  EXPECT_TRUE(c.verify_server_final("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", error))
      << error;
}

TEST(ScramClient, Sha512MatchesKafkaPythonScramClient) {
  // kafka.scram.ScramClient("alice", "alice-secret", "SCRAM-SHA-512") with its
  // nonce set to the client nonce below, fed the same server-first-message.
  ScramClient c(ScramHash::kSha512, "alice", "alice-secret", "fyko+d2lbbFgONRv9qkxdawL");
  std::string final_message, error;
  ASSERT_TRUE(c.client_final(
      "r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096", final_message,
      error)) << error;
  EXPECT_EQ(final_message,
            "c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,p=0eJWNsjwKE57CnG3Y3F0j0R878Ih"
            "iVME7lCPOAQCAaWPmyG5U0rYj97bR1fy0CO/tKkhVsbtMXYafNCsxUbPIA==");
  EXPECT_TRUE(c.verify_server_final(
      "v=BV38XWrAjRQ3k7uQ8/+CMb9yC76900pt4gC/IVYbX3RKcVN9TN7A61yHvv3wN6FAnv7HpM8fo4xeJ4MxWWKtTg==",
      error)) << error;
}

TEST(ScramClient, RefusesAServerThatDoesNotExtendTheNonce) {
  ScramClient c(ScramHash::kSha256, "user", "pencil", "abc");
  std::string out, error;
  EXPECT_FALSE(c.client_final("r=xyzdef,s=QSXCR+Q6sek8bf92,i=4096", out, error));
  EXPECT_FALSE(c.client_final("r=abc,s=QSXCR+Q6sek8bf92,i=4096", out, error));  // nothing added
  EXPECT_NE(error.find("nonce"), std::string::npos);
}

TEST(ScramClient, RefusesIterationCountsOutsideBounds) {
  ScramClient c(ScramHash::kSha256, "user", "pencil", "abc");
  std::string out, error;
  EXPECT_FALSE(c.client_final("r=abcdef,s=QSXCR+Q6sek8bf92,i=1000", out, error));
  EXPECT_FALSE(c.client_final("r=abcdef,s=QSXCR+Q6sek8bf92,i=99999999", out, error));
  EXPECT_FALSE(c.client_final("r=abcdef,s=QSXCR+Q6sek8bf92,i=4096x", out, error));
  EXPECT_FALSE(c.client_final("r=abcdef,s=not*base64,i=4096", out, error));
  EXPECT_FALSE(c.client_final("m=ext,r=abcdef,s=QSXCR+Q6sek8bf92,i=4096", out, error));
}

TEST(ScramClient, WrongOrMissingServerSignatureFails) {
  ScramClient c(ScramHash::kSha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
  std::string out, error;
  EXPECT_FALSE(c.verify_server_final("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", error))
      << "verified before client_final computed anything";
  ASSERT_TRUE(c.client_final(
      "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
      out, error));
  EXPECT_FALSE(c.verify_server_final("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", error));
  EXPECT_FALSE(c.verify_server_final("e=invalid-proof", error));
  EXPECT_NE(error.find("invalid-proof"), std::string::npos);
}

TEST(ScramClient, EscapesCommaAndEqualsInUserNames) {
  ScramClient c(ScramHash::kSha256, "a,b=c", "pw", "n1");
  EXPECT_EQ(c.client_first(), "n,,n=a=2Cb=3Dc,r=n1");
}

// Each sidecar session logs in with the same credential and the broker's
// same salt: PBKDF2 (2 ms at 4096 rounds, 50 ms at 100000) must run once,
// not on the worker loop for every session; the proofs stay right.
TEST(ScramClient, SaltedPasswordIsComputedOncePerSaltAndIterations) {
  const char* first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
  const std::string expected =
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
  const uint64_t before = scram_salted_password_runs();
  for (int i = 0; i < 3; ++i) {
    ScramClient c(ScramHash::kSha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    std::string final_message, error;
    ASSERT_TRUE(c.client_final(first, final_message, error)) << error;
    EXPECT_EQ(final_message, expected);
    EXPECT_TRUE(c.verify_server_final("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=", error));
  }
  EXPECT_LE(scram_salted_password_runs() - before, 1u);
  // Another password, salt or iteration count is computed afresh.
  for (const char* server_first :
       {"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gA==,i=4096",
        "r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4097"}) {
    const uint64_t n = scram_salted_password_runs();
    ScramClient c(ScramHash::kSha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    std::string final_message, error;
    ASSERT_TRUE(c.client_final(server_first, final_message, error)) << error;
    EXPECT_EQ(scram_salted_password_runs(), n + 1) << server_first;
  }
  const uint64_t n = scram_salted_password_runs();
  ScramClient other(ScramHash::kSha256, "user", "pencil2", "rOprNGfwEbeRWgbNEkqO");
  std::string final_message, error;
  ASSERT_TRUE(other.client_final(first, final_message, error)) << error;
  EXPECT_NE(final_message, expected);
  EXPECT_EQ(scram_salted_password_runs(), n + 1);
}

TEST(Base64, RoundTripsAndRejectsNonBase64) {
  for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
    std::string back;
    ASSERT_TRUE(base64_decode(base64_encode(s), back)) << s;
    EXPECT_EQ(back, s);
  }
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");  // RFC 4648 section 10
  std::string out;
  EXPECT_FALSE(base64_decode("Zm9", out));
  EXPECT_FALSE(base64_decode("Zm=v", out));
  EXPECT_FALSE(base64_decode("Zm9*", out));
}

}  // namespace
}  // namespace epochgate::proxy
