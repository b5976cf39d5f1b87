// proxy/session/sasl_framing.cc
#include "proxy/session/sasl_framing.h"

namespace epochgate::proxy {

namespace {

// Token exchanges of a mechanism under SaslHandshake v0 framing; -1 when
// the mechanism's length cannot be known without reading its tokens.
int rounds_of(std::string_view mechanism) {
  if (mechanism == "PLAIN") return 1;
  if (mechanism == "SCRAM-SHA-256" || mechanism == "SCRAM-SHA-512") return 2;
  if (mechanism == "OAUTHBEARER") return 1;
  return -1;
}

const char* label_of(std::string_view mechanism) {
  for (const char* m : {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI"})
    if (mechanism == m) return m;
  return "other";
}

}  // namespace

void SaslFraming::on_handshake_request(int16_t version, std::string_view mechanism) {
  handshake_seen_ = true;
  mechanism_label_ = label_of(mechanism);
  oauth_ = mechanism == "OAUTHBEARER";
  if (version != 0) {
    // Tokens travel in SaslAuthenticate requests; a mechanism of unknown
    // length counts as done after its first accepted round.
    const int rounds = rounds_of(mechanism);
    authenticate_rounds_left_ = rounds < 0 ? 1 : rounds;
    rounds_known_ = rounds >= 0;
    return;
  }
  state_ = State::kAwaitingHandshake;
  rounds_left_ = rounds_of(mechanism);
  first_round_ = true;
}

SaslLoginOutcome SaslFraming::on_handshake_response(int16_t error_code) {
  if (state_ == State::kAwaitingHandshake) {
    // A refused mechanism leaves the client speaking Kafka requests (it may
    // try another mechanism or give up).
    state_ = error_code == 0 ? State::kRawTokens : State::kRequests;
  }
  login_pending_ = error_code == 0;
  return error_code == 0 ? SaslLoginOutcome::kNone : SaslLoginOutcome::kFailed;
}

SaslLoginOutcome SaslFraming::on_client_request(int16_t api_key) {
  if (!login_pending_ || api_key == 17 || api_key == 36) return SaslLoginOutcome::kNone;
  login_pending_ = false;  // SaslHandshake and SaslAuthenticate (KIP-43, KIP-152) excluded
  return SaslLoginOutcome::kOk;
}

SaslLoginOutcome SaslFraming::on_authenticate_response(int16_t error_code, bool token_empty) {
  if (error_code == 0 && login_pending_ && authenticate_rounds_left_ > 0 &&
      (!oauth_ || token_empty) && --authenticate_rounds_left_ == 0) {
    authenticated_ = true;
    if (rounds_known_) {
      // The mechanism's last round was accepted: the login (or a KIP-368
      // re-login) has ended, whether or not a Kafka request follows before
      // the client closes the connection.
      login_pending_ = false;
      return SaslLoginOutcome::kOk;
    }
  }
  if (!login_pending_ || error_code == 0) return SaslLoginOutcome::kNone;
  login_pending_ = false;
  return SaslLoginOutcome::kFailed;
}

SaslLoginOutcome SaslFraming::on_connection_closed() {
  if (!login_pending_) return SaslLoginOutcome::kNone;
  login_pending_ = false;
  return SaslLoginOutcome::kFailed;
}

void SaslFraming::on_client_token() {
  if (state_ == State::kRawTokens) state_ = State::kAwaitingBrokerToken;
}

void SaslFraming::on_broker_token(size_t size) {
  if (state_ != State::kAwaitingBrokerToken) return;
  if (rounds_left_ < 0) {
    state_ = State::kRawTokens;  // the session decides from the next frame
    return;
  }
  // A non-empty first OAUTHBEARER answer is the error challenge; the
  // client answers it with %x01 and the broker then fails the login.
  if (oauth_ && first_round_ && size > 0) ++rounds_left_;
  first_round_ = false;
  state_ = --rounds_left_ > 0 ? State::kRawTokens : State::kRequests;
  if (state_ == State::kRequests) authenticated_ = true;
}

void SaslFraming::on_request_after_tokens() {
  if (state_ == State::kRawTokens && rounds_left_ < 0) {
    state_ = State::kRequests;
    authenticated_ = true;
  }
}

PreAuthCap SaslFraming::pre_auth_cap(const uint8_t* head, size_t have, size_t size,
                                     bool must_authenticate) const {
  if (size <= kPreAuthMaxFrameBytes) return PreAuthCap::kFree;
  if (state_ != State::kRequests) return PreAuthCap::kCapped;  // a raw token
  if (must_authenticate && !authenticated_) return PreAuthCap::kCapped;
  if (have < 2) return PreAuthCap::kNeedHeader;
  const int16_t key = static_cast<int16_t>((head[0] << 8) | head[1]);
  // SaslHandshake (KIP-43), ApiVersions (KIP-35), SaslAuthenticate (KIP-152).
  if (key == 17 || key == 18 || key == 36) return PreAuthCap::kCapped;
  return PreAuthCap::kFree;
}

}  // namespace epochgate::proxy
