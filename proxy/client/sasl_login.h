// proxy/client/sasl_login.h: epochgate's own SASL login on a broker connection it
// owns (the refresher's): SaslHandshake v1, then SaslAuthenticate v1 rounds
// (KIP-152) for PLAIN (RFC 4616), SCRAM-SHA-256/512 (RFC 5802, RFC 7677,
// KIP-84) or OAUTHBEARER (RFC 7628, KIP-255), and the session lifetime the
// broker grants (KIP-368), so the caller can log in again before it ends.
// Pure: builds request frames and reads response frames; the caller owns
// the socket and the clock. Credentials are read from their files or
// environment variables at each login, so a rotated Secret or token file is
// used by the next login. Never logs a credential or a token.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/client/sasl_scram.h"

namespace epochgate::proxy {

/// What the caller does next in a login.
struct SaslLoginStep {
  enum class Kind {
    kSend,    ///< write `frame` (size-prefixed request) and feed the answer back
    kDerive,  ///< run `salted` off the loop (ScramDerivation), then on_derived()
    kDone,    ///< logged in; `session_lifetime_ms` 0 means no expiry
    kFailed   ///< `error` says why (the broker's own message when it sent one)
  };
  SaslLoginStep() = default;
  SaslLoginStep(SaslLoginStep&&) = default;
  SaslLoginStep& operator=(SaslLoginStep&&) = default;
  /// Wipes `frame`: a PLAIN or OAUTHBEARER login frame holds the secret.
  ~SaslLoginStep();

  Kind kind = Kind::kFailed;
  std::vector<uint8_t> frame;
  int64_t session_lifetime_ms = 0;
  std::string error;
  std::unique_ptr<ScramSaltedPassword> salted;  ///< kDerive: what to derive
};

/// One login. Create one per attempt; start(), then on_response() for every
/// answer until kDone or kFailed.
class SaslLogin {
 public:
  /// `config.mechanism` must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512,
  /// OAUTHBEARER (the loader checks it).
  explicit SaslLogin(const config::UpstreamSaslConfig& config);
  ~SaslLogin();

  /// Reads the credentials and returns the SaslHandshake v1 request, or
  /// kFailed when a credential file or variable cannot be read.
  SaslLoginStep start(int32_t correlation_id);
  /// Feeds the broker's answer (frame without its size prefix) to the
  /// request of the last kSend; the next request uses `correlation_id`.
  /// A SCRAM server-first message whose salted password this process has
  /// not derived yet gives kDerive: the caller derives it off the loop and
  /// hands the result to on_derived(); an answer meanwhile fails the login.
  SaslLoginStep on_response(const uint8_t* frame, size_t size, int32_t correlation_id);
  /// Continues a login after kDerive with the derived salted password
  /// (`salted` empty: PBKDF2 failed, kFailed); the client-final request
  /// uses `correlation_id`.
  SaslLoginStep on_derived(std::unique_ptr<ScramSaltedPassword> ready, int32_t correlation_id);
  /// Correlation id the next answer must carry.
  int32_t awaiting_correlation() const { return awaiting_; }
  const std::string& mechanism() const { return config_.mechanism; }

 private:
  enum class Stage { kHandshake, kAuthenticate, kDeriving, kDone };
  SaslLoginStep authenticate(const std::string& token, int32_t correlation_id);
  SaslLoginStep failed(std::string why);

  config::UpstreamSaslConfig config_;
  Stage stage_ = Stage::kHandshake;
  int32_t awaiting_ = 0;
  int rounds_ = 0;
  std::string username_;
  std::string secret_;  // password or OAUTHBEARER token
  std::unique_ptr<ScramClient> scram_;
};

/// Reads a credential: `value` if set, else the first line of `file`
/// (without its line end and trailing spaces; the rest is ignored),
/// else the environment variable `env`. False with `error` (naming
/// the file or variable, never its content) when the source is missing.
bool read_credential(const std::string& value, const std::string& file, const std::string& env,
                     const char* what, std::string& out, std::string& error);

}  // namespace epochgate::proxy
