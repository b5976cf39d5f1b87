// proxy/session/sasl_framing.h: where a client connection stops carrying Kafka
// requests. After a successful SaslHandshake v0 (KIP-43) the client sends
// raw length-prefixed SASL tokens, with no request header, and the broker
// answers each with a raw token, until the mechanism's exchange is over;
// SaslHandshake v1 (KIP-152) keeps every token inside SaslAuthenticate
// requests instead. This tracker tells the session how to read the next
// client frame and how to match the next broker frame.
// It never looks inside a token beyond its length, and never keeps one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace epochgate::proxy {

/// How a client's own login ended, as far as framing shows it: failed when
/// the broker answered a SaslHandshake or SaslAuthenticate with an error or
/// closed the connection during the login, ok when the client's next Kafka
/// request (other than SASL) follows the login.
enum class SaslLoginOutcome { kNone, kOk, kFailed };

/// Largest client frame (size prefix excluded) accepted before the client
/// has authenticated: Kafka's sasl.server.max.receive.size default (512 KiB),
/// so a peer that never logs in cannot make epochgate buffer more for it
/// than a broker would.
inline constexpr uint32_t kPreAuthMaxFrameBytes = 512 * 1024;

/// Whether a client frame is held to kPreAuthMaxFrameBytes.
enum class PreAuthCap {
  kFree,        ///< the general limit (limits.max_frame_bytes) applies
  kCapped,      ///< held to kPreAuthMaxFrameBytes
  kNeedHeader,  ///< the request's API key has not arrived yet
};

/// The SASL framing state of one client connection. Driven by the session:
/// a SaslHandshake request going upstream, its answer, then (v0 only) each
/// raw token and the broker's raw answer to it.
class SaslFraming {
 public:
  /// A SaslHandshake request of `version` naming `mechanism` was forwarded.
  /// With v0 the session must read no further client frame until the
  /// answer is seen (the next frame's framing depends on it).
  void on_handshake_request(int16_t version, std::string_view mechanism);
  /// The broker answered the forwarded SaslHandshake with `error_code`;
  /// 0 after a v0 handshake makes the client's next frames raw tokens.
  SaslLoginOutcome on_handshake_response(int16_t error_code);

  /// A raw token was forwarded: the broker's next frame is its raw answer,
  /// and the session reads no further client frame until it arrives.
  void on_client_token();
  /// The broker's raw answer (`size` bytes, size prefix excluded) reached
  /// the client. Ends the raw exchange after the mechanism's rounds: PLAIN
  /// 1 (RFC 4616), SCRAM-SHA-256/512 2 (RFC 5802), OAUTHBEARER 1, or 2 when
  /// the first answer is an error challenge (RFC 7628 3.2.2).
  void on_broker_token(size_t size);
  /// For a mechanism whose round count is not known (GSSAPI and others):
  /// the session saw that the client's next frame parses as a Kafka request
  /// header of a known API and version, so the exchange has ended.
  void on_request_after_tokens();

  /// A Kafka request of `api_key` from the client (not a raw token).
  SaslLoginOutcome on_client_request(int16_t api_key);
  /// A SaslAuthenticate answer with `error_code` reached the client;
  /// `token_empty`: its auth_bytes were empty (an OAUTHBEARER success; a
  /// non-empty first answer is RFC 7628's error challenge). kOk when it
  /// accepted the last round of a mechanism whose rounds are known (a
  /// mechanism of unknown length ends at the next Kafka request instead).
  SaslLoginOutcome on_authenticate_response(int16_t error_code, bool token_empty = true);
  /// The connection closed (any side).
  SaslLoginOutcome on_connection_closed();
  /// Metric label of the login's mechanism: one of the four Kafka offers
  /// with a known framing, or "other" (bounded: never the client's string).
  const char* mechanism_label() const { return mechanism_label_; }

  /// The next client frame is a raw SASL token, not a Kafka request.
  bool client_sends_raw_token() const { return state_ == State::kRawTokens; }
  /// The next broker frame answers a raw token: it has no correlation id.
  bool broker_sends_raw_token() const { return state_ == State::kAwaitingBrokerToken; }
  /// Client frames must wait: a v0 handshake or a raw token is unanswered.
  bool holds_client_input() const {
    return state_ == State::kAwaitingHandshake || state_ == State::kAwaitingBrokerToken;
  }
  /// The client started a SASL login of its own on this connection (its
  /// principal is one epochgate cannot log in as).
  bool client_authenticates() const { return handshake_seen_; }
  /// The raw exchange's mechanism has no known round count.
  bool rounds_unknown() const { return rounds_left_ < 0; }
  /// The broker accepted the client's login: every SaslAuthenticate round
  /// of the mechanism answered without error (v1), or the raw token
  /// exchange ended (v0).
  bool authenticated() const { return authenticated_; }

  /// Whether the next client frame of `size` bytes (size prefix excluded),
  /// whose first `have` bytes are at `head`, is held to
  /// kPreAuthMaxFrameBytes: a raw SASL token; an ApiVersions, SaslHandshake
  /// or SaslAuthenticate request (brokers answer them before login); or,
  /// when the cluster authenticates every client (`must_authenticate`),
  /// any frame before authenticated().
  PreAuthCap pre_auth_cap(const uint8_t* head, size_t have, size_t size,
                          bool must_authenticate) const;

 private:
  enum class State {
    kRequests,            ///< Kafka requests (the usual case)
    kAwaitingHandshake,   ///< SaslHandshake v0 forwarded, answer not seen
    kRawTokens,           ///< next client frame is a raw token
    kAwaitingBrokerToken  ///< a raw token forwarded, its answer not seen
  };
  State state_ = State::kRequests;
  int rounds_left_ = 0;        ///< raw exchanges still due; -1: not known
  bool oauth_ = false;         ///< OAUTHBEARER: an error challenge adds a round
  bool first_round_ = true;
  bool login_pending_ = false;  ///< a handshake was accepted, the login has not ended
  const char* mechanism_label_ = "other";
  bool handshake_seen_ = false;
  int authenticate_rounds_left_ = 0;  ///< v1: SaslAuthenticate answers still due
  bool rounds_known_ = false;  ///< v1: the mechanism's round count is known
  bool authenticated_ = false;
};

}  // namespace epochgate::proxy
