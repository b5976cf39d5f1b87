// tests/proxy/session/sasl_framing_test.cc: how the session reads client and broker
// frames around SaslHandshake v0 raw tokens (KIP-43) and v1 (KIP-152).
#include "proxy/session/sasl_framing.h"

#include <gtest/gtest.h>

namespace epochgate::proxy {
namespace {

TEST(SaslFraming, StartsWithKafkaRequests) {
  SaslFraming f;
  EXPECT_FALSE(f.client_sends_raw_token());
  EXPECT_FALSE(f.broker_sends_raw_token());
  EXPECT_FALSE(f.holds_client_input());
}

TEST(SaslFraming, HandshakeV1KeepsRequestFraming) {
  SaslFraming f;
  f.on_handshake_request(1, "SCRAM-SHA-256");
  EXPECT_FALSE(f.holds_client_input());
  f.on_handshake_response(0);
  EXPECT_FALSE(f.client_sends_raw_token());
}

TEST(SaslFraming, HandshakeV0HoldsClientFramesUntilAnswered) {
  SaslFraming f;
  f.on_handshake_request(0, "PLAIN");
  EXPECT_TRUE(f.holds_client_input());
  EXPECT_FALSE(f.broker_sends_raw_token());  // the handshake answer has a header
  f.on_handshake_response(0);
  EXPECT_FALSE(f.holds_client_input());
  EXPECT_TRUE(f.client_sends_raw_token());
}

TEST(SaslFraming, RefusedMechanismLeavesRequestFraming) {
  SaslFraming f;
  f.on_handshake_request(0, "PLAIN");
  f.on_handshake_response(33);  // UNSUPPORTED_SASL_MECHANISM
  EXPECT_FALSE(f.client_sends_raw_token());
  EXPECT_FALSE(f.holds_client_input());
}

TEST(SaslFraming, PlainIsOneTokenExchange) {
  SaslFraming f;
  f.on_handshake_request(0, "PLAIN");
  f.on_handshake_response(0);
  f.on_client_token();
  EXPECT_TRUE(f.broker_sends_raw_token());
  EXPECT_TRUE(f.holds_client_input());
  f.on_broker_token(0);  // a broker answers PLAIN with an empty token
  EXPECT_FALSE(f.client_sends_raw_token());
  EXPECT_FALSE(f.broker_sends_raw_token());
  EXPECT_FALSE(f.holds_client_input());
}

TEST(SaslFraming, ScramIsTwoTokenExchanges) {
  for (const char* mechanism : {"SCRAM-SHA-256", "SCRAM-SHA-512"}) {
    SaslFraming f;
    f.on_handshake_request(0, mechanism);
    f.on_handshake_response(0);
    f.on_client_token();      // client-first-message
    f.on_broker_token(80);    // server-first-message
    EXPECT_TRUE(f.client_sends_raw_token()) << mechanism;
    f.on_client_token();      // client-final-message
    f.on_broker_token(50);    // server-final-message
    EXPECT_FALSE(f.client_sends_raw_token()) << mechanism;
    EXPECT_FALSE(f.holds_client_input()) << mechanism;
  }
}

TEST(SaslFraming, OauthBearerErrorChallengeAddsARound) {
  SaslFraming ok;
  ok.on_handshake_request(0, "OAUTHBEARER");
  ok.on_handshake_response(0);
  ok.on_client_token();
  ok.on_broker_token(0);
  EXPECT_FALSE(ok.client_sends_raw_token());

  SaslFraming refused;
  refused.on_handshake_request(0, "OAUTHBEARER");
  refused.on_handshake_response(0);
  refused.on_client_token();
  refused.on_broker_token(27);  // {"status":"invalid_token"}
  EXPECT_TRUE(refused.client_sends_raw_token());  // the client's %x01 follows
}

TEST(SaslFraming, UnknownMechanismEndsAtTheFirstRequest) {
  SaslFraming f;
  f.on_handshake_request(0, "GSSAPI");
  f.on_handshake_response(0);
  EXPECT_TRUE(f.rounds_unknown());
  for (int i = 0; i < 3; ++i) {
    f.on_client_token();
    f.on_broker_token(100);
    EXPECT_TRUE(f.client_sends_raw_token());
  }
  f.on_request_after_tokens();
  EXPECT_FALSE(f.client_sends_raw_token());
}

TEST(SaslFraming, KnownMechanismIgnoresRequestLookalikes) {
  SaslFraming f;
  f.on_handshake_request(0, "SCRAM-SHA-256");
  f.on_handshake_response(0);
  f.on_request_after_tokens();  // only for mechanisms of unknown length
  EXPECT_TRUE(f.client_sends_raw_token());
}

TEST(SaslFraming, LoginEndsOkAtTheLastAcceptedRoundOfAKnownMechanism) {
  SaslFraming f;
  f.on_handshake_request(1, "SCRAM-SHA-512");
  EXPECT_EQ(f.on_handshake_response(0), SaslLoginOutcome::kNone);
  EXPECT_EQ(f.on_client_request(36), SaslLoginOutcome::kNone);  // SaslAuthenticate rounds
  EXPECT_EQ(f.on_authenticate_response(0), SaslLoginOutcome::kNone);  // server-first
  EXPECT_EQ(f.on_authenticate_response(0), SaslLoginOutcome::kOk);    // server-final
  EXPECT_EQ(f.on_client_request(3), SaslLoginOutcome::kNone);  // counted once
  EXPECT_EQ(f.on_connection_closed(), SaslLoginOutcome::kNone);
  EXPECT_STREQ(f.mechanism_label(), "SCRAM-SHA-512");
}

TEST(SaslFraming, AReloginThenACloseIsNoFailure) {
  // KIP-368: a client logs in again on a live connection, then closes it
  // (librdkafka dropping its bootstrap connection, a client shutting down)
  // before its next Kafka request. The broker accepted the re-login.
  SaslFraming f;
  f.on_handshake_request(1, "PLAIN");
  f.on_handshake_response(0);
  EXPECT_EQ(f.on_authenticate_response(0), SaslLoginOutcome::kOk);
  EXPECT_EQ(f.on_client_request(0), SaslLoginOutcome::kNone);  // Produce
  f.on_handshake_request(1, "PLAIN");
  EXPECT_EQ(f.on_handshake_response(0), SaslLoginOutcome::kNone);
  EXPECT_EQ(f.on_authenticate_response(0), SaslLoginOutcome::kOk);
  EXPECT_EQ(f.on_connection_closed(), SaslLoginOutcome::kNone);
}

TEST(SaslFraming, UnknownMechanismLoginEndsOkAtTheFirstKafkaRequest) {
  SaslFraming f;
  f.on_handshake_request(1, "GSSAPI");
  f.on_handshake_response(0);
  EXPECT_EQ(f.on_authenticate_response(0), SaslLoginOutcome::kNone);  // more rounds may follow
  EXPECT_EQ(f.on_authenticate_response(0), SaslLoginOutcome::kNone);
  EXPECT_EQ(f.on_client_request(3), SaslLoginOutcome::kOk);
  EXPECT_STREQ(f.mechanism_label(), "GSSAPI");
}

TEST(SaslFraming, LoginFailsOnAnErrorOrAClose) {
  SaslFraming refused;
  refused.on_handshake_request(1, "PLAIN");
  refused.on_handshake_response(0);
  EXPECT_EQ(refused.on_authenticate_response(58), SaslLoginOutcome::kFailed);
  EXPECT_EQ(refused.on_connection_closed(), SaslLoginOutcome::kNone);  // counted once

  SaslFraming closed;  // v0 framing has no error field: the broker closes
  closed.on_handshake_request(0, "PLAIN");
  closed.on_handshake_response(0);
  closed.on_client_token();
  EXPECT_EQ(closed.on_connection_closed(), SaslLoginOutcome::kFailed);

  SaslFraming unsupported;
  unsupported.on_handshake_request(1, "made-up");
  EXPECT_EQ(unsupported.on_handshake_response(33), SaslLoginOutcome::kFailed);
  EXPECT_STREQ(unsupported.mechanism_label(), "other");  // never the client's string
}

// The pre-authentication cap: what a broker reads before login (512 KiB).
const uint8_t kProduceKey[] = {0, 0};
const uint8_t kSaslHandshakeKey[] = {0, 17};
constexpr size_t kOver = kPreAuthMaxFrameBytes + 1;

TEST(SaslFraming, LoginRequestsAreCappedBeforeAuthentication) {
  SaslFraming f;
  EXPECT_EQ(f.pre_auth_cap(kSaslHandshakeKey, 2, kOver, false), PreAuthCap::kCapped);
  EXPECT_EQ(f.pre_auth_cap(kSaslHandshakeKey, 2, kPreAuthMaxFrameBytes, false), PreAuthCap::kFree);
  EXPECT_EQ(f.pre_auth_cap(kProduceKey, 2, kOver, false), PreAuthCap::kFree);
  EXPECT_EQ(f.pre_auth_cap(kProduceKey, 1, kOver, false), PreAuthCap::kNeedHeader);
}

TEST(SaslFraming, EveryFrameIsCappedUntilLoginWhereClientsMustAuthenticate) {
  SaslFraming f;
  EXPECT_EQ(f.pre_auth_cap(kProduceKey, 2, kOver, true), PreAuthCap::kCapped);
  f.on_handshake_request(1, "SCRAM-SHA-512");
  f.on_handshake_response(0);
  f.on_authenticate_response(0);  // server-first
  EXPECT_FALSE(f.authenticated());
  EXPECT_EQ(f.pre_auth_cap(kProduceKey, 2, kOver, true), PreAuthCap::kCapped);
  f.on_authenticate_response(0);  // server-final
  EXPECT_TRUE(f.authenticated());
  EXPECT_EQ(f.pre_auth_cap(kProduceKey, 2, kOver, true), PreAuthCap::kFree);
}

TEST(SaslFraming, OauthErrorChallengeIsNotALogin) {
  SaslFraming f;
  f.on_handshake_request(1, "OAUTHBEARER");
  f.on_handshake_response(0);
  f.on_authenticate_response(0, false);  // RFC 7628 3.2.2 error challenge
  EXPECT_FALSE(f.authenticated());
  f.on_authenticate_response(0, true);
  EXPECT_TRUE(f.authenticated());
}

TEST(SaslFraming, RawTokensAreCappedAndTheirEndIsALogin) {
  SaslFraming f;
  f.on_handshake_request(0, "PLAIN");
  f.on_handshake_response(0);
  EXPECT_EQ(f.pre_auth_cap(kProduceKey, 2, kOver, false), PreAuthCap::kCapped);
  f.on_client_token();
  f.on_broker_token(0);
  EXPECT_TRUE(f.authenticated());
  EXPECT_EQ(f.pre_auth_cap(kProduceKey, 2, kOver, true), PreAuthCap::kFree);
}

TEST(SaslFraming, AFailedRoundIsNoLogin) {
  SaslFraming f;
  f.on_handshake_request(1, "PLAIN");
  f.on_handshake_response(0);
  f.on_authenticate_response(58);  // SASL_AUTHENTICATION_FAILED
  EXPECT_FALSE(f.authenticated());
}

}  // namespace
}  // namespace epochgate::proxy
