// proxy/client/sasl_scram.h: the client side of SCRAM (RFC 5802) with SHA-256 and
// SHA-512 (RFC 7677; Kafka's SCRAM-SHA-256 and SCRAM-SHA-512, KIP-84), for
// epochgate's own broker connections. PBKDF2 and HMAC come from OpenSSL.
// Pure: no sockets, no clock; the nonce is injected so test vectors apply.
// Never logs, and never returns the password or the salted password.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace epochgate::proxy {

/// Hash function of a SCRAM mechanism. SHA-1 exists for RFC 5802's own test
/// vector; Kafka offers only SHA-256 and SHA-512.
enum class ScramHash { kSha1, kSha256, kSha512 };

/// The one expensive step of a SCRAM login, RFC 5802 Hi(): PBKDF2 of the
/// password with the server's salt and iteration count (up to 100000
/// rounds, ~50 ms with SHA-512). A login hands it to ScramDerivation
/// (proxy/client/scram_derivation.h) so that it never runs on an event
/// loop; derive() is safe on any thread. Wipes the password and the salted
/// password when destroyed.
struct ScramSaltedPassword {
  ScramSaltedPassword() = default;
  ScramSaltedPassword(const ScramSaltedPassword&) = default;
  ScramSaltedPassword& operator=(const ScramSaltedPassword&) = delete;
  ~ScramSaltedPassword();

  /// True (and `salted` set) when this process already derived it: the
  /// process-wide cache, keyed by a digest of hash, password, salt and
  /// iterations (the key never holds the password).
  bool from_cache();
  /// Runs PBKDF2 and stores the result in the cache; false when OpenSSL
  /// fails (`salted` empty then).
  bool derive();

  ScramHash hash = ScramHash::kSha256;
  std::string password;
  std::string salt;        ///< raw bytes (decoded from the server's "s=")
  int iterations = 0;      ///< the server's "i=", already checked in 4096..100000
  std::string key;         ///< the cache key; empty when it could not be made
  std::string salted;      ///< the result: raw bytes, one digest long
};

/// One SCRAM login as the client: client-first, then client-final from the
/// server-first message, then a check of the server-final message.
class ScramClient {
 public:
  /// `nonce`: printable characters without ',' (RFC 5802 5.1 "r=");
  /// random_nonce() makes one.
  ScramClient(ScramHash hash, std::string username, std::string password, std::string nonce);
  ~ScramClient();

  /// 24 random bytes from OpenSSL's RAND_bytes, base64: a fresh client
  /// nonce; empty when RAND_bytes fails (no login may use it then).
  static std::string random_nonce();

  /// "n,,n=<username with ',' and '=' escaped>,r=<nonce>".
  std::string client_first() const;
  /// The client-final message answering `server_first`
  /// ("r=<nonce>,s=<salt>,i=<iterations>"). False with `error` set when the
  /// server's nonce does not extend ours, the salt is not base64, or the
  /// iteration count is below 4096 (Kafka's minimum) or above 100000.
  /// Derives the salted password on the calling thread: for tests and
  /// callers without a loop; a login on a loop uses begin_final().
  bool client_final(std::string_view server_first, std::string& out, std::string& error);
  /// The first half of client_final(): checks `server_first` as it does and
  /// fills `need` with what the salted password takes (its `salted` already
  /// set when cached). False with `error` as client_final().
  bool begin_final(std::string_view server_first, ScramSaltedPassword& need, std::string& error);
  /// The second half: the client-final message from `ready.salted`, for the
  /// server-first message begin_final() accepted.
  std::string finish_final(const ScramSaltedPassword& ready);
  /// True when `server_final` is "v=<the server signature we expect>";
  /// false with `error` for "e=<server error>" or a wrong signature.
  bool verify_server_final(std::string_view server_final, std::string& error) const;

 private:
  ScramHash hash_;
  std::string username_;
  std::string password_;
  std::string nonce_;
  std::string server_first_;  // set by begin_final
  std::string server_nonce_;  // its "r=", set by begin_final
  std::string expected_server_signature_;  // raw bytes, set by client_final
};

/// RFC 4648 base64 (with padding). Used by SCRAM and OAUTHBEARER tokens.
std::string base64_encode(std::string_view bytes);
/// Decodes standard base64 with padding; false on any other input.
bool base64_decode(std::string_view text, std::string& out);

}  // namespace epochgate::proxy
