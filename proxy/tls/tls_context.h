// proxy/tls/tls_context.h: builds the OpenSSL contexts epochgate's TLS
// connections use: the client-facing server context (tls.*) and the
// upstream client context (upstream_tls.*), from PEM files. Checks at load
// what a bad rotation would otherwise break at the first handshake (a key
// that does not match its certificate, an unreadable CA bundle) and reports
// the file and OpenSSL's reason. Reads what each loaded certificate says
// (subjects, expiry) for /debug/config and the expiry gauge. A built context
// never changes; a reload builds a new one (proxy/tls/tls_reloader.h).
// Never keeps key material or passwords beyond the load, and never logs them.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"

namespace epochgate::proxy::tls {

/// Longest a client-facing TLS session may be resumed when client
/// certificates are asked for (seconds); session tickets are off then.
inline constexpr long kClientAuthSessionSeconds = 300;

/// What one loaded PEM file holds, for operators (never key material).
struct CertFileInfo {
  std::string setting;  ///< config path, e.g. "tls.cert_file"
  std::string file;
  std::string subject;  ///< first certificate's subject, RFC 2253 form
  std::string issuer;
  std::vector<std::string> dns_names;  ///< subjectAltName DNS entries of the first certificate
  int64_t not_before = 0;  ///< unix seconds, first certificate
  int64_t not_after = 0;   ///< unix seconds: the earliest notAfter of every certificate in the file
  int certificates = 0;
};

/// An SSL_CTX (shared by the connections made from it: each SSL holds its
/// own reference, so a connection keeps its context after a reload) and
/// the files it was built from.
class TlsContext {
 public:
  enum class Role { kServer, kClient };
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// Client-facing context from `c` (c.enabled()): chain and key, optional
  /// client CA and client_auth. Returns null and sets `error` to
  /// "<setting> <file>: <what>: <OpenSSL reason>" when a file cannot be
  /// read or parsed, the key does not match the certificate, or the key
  /// password file is unreadable.
  static std::shared_ptr<const TlsContext> build_server(const config::TlsConfig& c,
                                                        std::string& error);
  /// Upstream context from `c`: CA bundle (file or directory of PEM files;
  /// the system store when empty), optional client certificate and key.
  /// Errors as build_server().
  static std::shared_ptr<const TlsContext> build_client(const config::UpstreamTlsConfig& c,
                                                        std::string& error);

  SSL_CTX* ctx() const { return ctx_; }
  Role role() const { return role_; }
  /// Upstream: the peer certificate must name the dialled host.
  bool verify_hostname() const { return verify_hostname_; }
  /// Every certificate file loaded (own chain first, then CA files).
  const std::vector<CertFileInfo>& files() const { return files_; }
  /// Every path the context was read from (watched for changes).
  std::vector<std::string> paths() const { return paths_; }

 private:
  TlsContext(SSL_CTX* ctx, Role role) : ctx_(ctx), role_(role) {}
  SSL_CTX* ctx_;
  Role role_;
  bool verify_hostname_ = false;
  std::vector<CertFileInfo> files_;
  std::vector<std::string> paths_;
};

/// Reads the certificates of a PEM file. False with `error` when it holds none.
bool read_cert_file(const std::string& setting, const std::string& file, CertFileInfo& out,
                    std::string& error);

/// Drains OpenSSL's error queue of this thread into one line ("" if empty).
std::string openssl_errors();

}  // namespace epochgate::proxy::tls
