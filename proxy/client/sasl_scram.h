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
  bool client_final(std::string_view server_first, std::string& out, std::string& error);
  /// True when `server_final` is "v=<the server signature we expect>";
  /// false with `error` for "e=<server error>" or a wrong signature.
  bool verify_server_final(std::string_view server_final, std::string& error) const;

 private:
  ScramHash hash_;
  std::string username_;
  std::string password_;
  std::string nonce_;
  std::string expected_server_signature_;  // raw bytes, set by client_final
};

/// RFC 4648 base64 (with padding). Used by SCRAM and OAUTHBEARER tokens.
std::string base64_encode(std::string_view bytes);
/// Decodes standard base64 with padding; false on any other input.
bool base64_decode(std::string_view text, std::string& out);

}  // namespace epochgate::proxy
