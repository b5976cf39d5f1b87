// proxy/sasl_framing.cc
#include "proxy/sasl_framing.h"

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

}  // namespace

void SaslFraming::on_handshake_request(int16_t version, std::string_view mechanism) {
  if (version != 0) return;  // tokens travel in SaslAuthenticate requests
  state_ = State::kAwaitingHandshake;
  rounds_left_ = rounds_of(mechanism);
  oauth_ = mechanism == "OAUTHBEARER";
  first_round_ = true;
}

void SaslFraming::on_handshake_response(int16_t error_code) {
  if (state_ != State::kAwaitingHandshake) return;
  // A refused mechanism leaves the client speaking Kafka requests (it may
  // try another mechanism or give up).
  state_ = error_code == 0 ? State::kRawTokens : State::kRequests;
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
}

void SaslFraming::on_request_after_tokens() {
  if (state_ == State::kRawTokens && rounds_left_ < 0) state_ = State::kRequests;
}

}  // namespace epochgate::proxy
