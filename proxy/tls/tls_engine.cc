// proxy/tls/tls_engine.cc
#include "proxy/tls/tls_engine.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>

#include <cstring>

namespace epochgate::proxy::tls {

namespace {
// TLS record content type "handshake" (RFC 8446 section 5.1): the first
// byte of every ClientHello. A Kafka request starts with its length's high
// byte, 0 for any frame under 16 MiB.
constexpr uint8_t kHandshakeRecord = 0x16;
constexpr size_t kReadChunk = 16 * 1024;

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

Failure verify_failure(long v) {
  switch (v) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return Failure::kExpired;
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return Failure::kNotYetValid;
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH:
      return Failure::kHostnameMismatch;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
      return Failure::kUnknownCa;
    default:
      return Failure::kBadCertificate;
  }
}
}  // namespace

const char* failure_name(Failure f) {
  switch (f) {
    case Failure::kNone: return "ok";
    case Failure::kNotTls: return "not_tls";
    case Failure::kUnknownCa: return "unknown_ca";
    case Failure::kExpired: return "expired";
    case Failure::kNotYetValid: return "not_yet_valid";
    case Failure::kHostnameMismatch: return "hostname_mismatch";
    case Failure::kNoClientCertificate: return "no_client_certificate";
    case Failure::kBadCertificate: return "bad_certificate";
    case Failure::kUnknownServerName: return "unknown_server_name";
    case Failure::kUnknownNode: return "unknown_node";
    case Failure::kPeerAlert: return "peer_alert";
    case Failure::kClosed: return "closed";
    case Failure::kTimeout: return "timeout";
    case Failure::kProtocol: return "protocol";
  }
  return "protocol";
}

TlsEngine::TlsEngine(std::shared_ptr<const TlsContext> ctx, SSL* ssl)
    : ctx_(std::move(ctx)), ssl_(ssl) {
  // One BIO both ways (one reference, which SSL_set_bio takes). Empty input
  // means "wait for more", never end of stream: the transport reports the
  // socket's EOF itself.
  BIO* bio = new_cipher_bio(&cipher_);
  SSL_set_bio(ssl_, bio, bio);
  SSL_set_app_data(ssl_, this);
  SSL_set_info_callback(ssl_, &TlsEngine::on_info);
}

void TlsEngine::on_info(const SSL* ssl, int where, int ret) {
  // The only trace OpenSSL leaves of a refused renegotiation is the alert
  // it sends (SSL_CB_WRITE_ALERT: ret is level << 8 | description).
  // SSL_CB_WRITE_ALERT is two bits (alert, write): a read alert has one.
  if ((where & SSL_CB_WRITE_ALERT) != SSL_CB_WRITE_ALERT ||
      (ret & 0xff) != SSL_AD_NO_RENEGOTIATION)
    return;
  auto* e = static_cast<TlsEngine*>(SSL_get_app_data(ssl));
  if (e != nullptr) ++e->renegotiations_refused_;
}

TlsEngine::~TlsEngine() { SSL_free(ssl_); }

std::unique_ptr<TlsEngine> TlsEngine::client(std::shared_ptr<const TlsContext> ctx,
                                             const std::string& host) {
  SSL* ssl = SSL_new(ctx->ctx());
  std::unique_ptr<TlsEngine> e(new TlsEngine(ctx, ssl));
  SSL_set_connect_state(ssl);
  const bool ip = is_ip_literal(host);
  if (!ip && !host.empty()) SSL_set_tlsext_host_name(ssl, host.c_str());
  if (ctx->verify_hostname()) {
    X509_VERIFY_PARAM* p = SSL_get0_param(ssl);
    // RFC 6125 6.4.4: the subject CN is a fallback clients should not use;
    // a certificate without a matching subjectAltName is refused.
    X509_VERIFY_PARAM_set_hostflags(
        p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS | X509_CHECK_FLAG_NEVER_CHECK_SUBJECT);
    if (ip)
      X509_VERIFY_PARAM_set1_ip_asc(p, host.c_str());
    else
      X509_VERIFY_PARAM_set1_host(p, host.c_str(), host.size());
  }
  return e;
}

std::unique_ptr<TlsEngine> TlsEngine::server(std::shared_ptr<const TlsContext> ctx,
                                             SniRoute route, NodeExists exists) {
  SSL* ssl = SSL_new(ctx->ctx());
  std::unique_ptr<TlsEngine> e(new TlsEngine(ctx, ssl));
  SSL_set_accept_state(ssl);
  e->server_ = true;
  e->route_ = std::move(route);
  e->exists_ = std::move(exists);
  return e;
}

int TlsEngine::on_server_name(SSL* ssl, int* alert, void*) {
  auto* e = static_cast<TlsEngine*>(SSL_get_app_data(ssl));
  if (e == nullptr) return SSL_TLSEXT_ERR_OK;
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  e->server_name_ = name != nullptr ? name : "";
  if (!e->route_) return SSL_TLSEXT_ERR_OK;
  e->routed_ = e->route_(e->server_name_);
  if (!e->routed_) {
    e->failure_ = Failure::kUnknownServerName;
    e->detail_ = "no broker is named \"" + e->server_name_ + "\" (tls.sni.broker_host_pattern)";
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  // The pattern makes a name for every id; only the cluster's nodes are
  // brokers. Asked per handshake, so a node a refresh adds routes at once.
  if (*e->routed_ >= 0 && e->exists_ && !e->exists_(*e->routed_)) {
    e->failure_ = Failure::kUnknownNode;
    e->detail_ = "server name \"" + e->server_name_ + "\" names node " +
                 std::to_string(*e->routed_) + ", which is not in the cluster's metadata";
    e->routed_.reset();
    *alert = SSL_AD_UNRECOGNIZED_NAME;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
  }
  return SSL_TLSEXT_ERR_OK;
}

bool TlsEngine::accept_first_bytes(const uint8_t* data, size_t n) {
  if (n == 0 || failure_ != Failure::kNone) return false;
  if (server_ && !first_bytes_seen_ && data[0] != kHandshakeRecord) {
    fail(Failure::kNotTls, "the first byte is not a TLS handshake record (plaintext on a TLS port?)");
    return false;
  }
  first_bytes_seen_ = true;
  return true;
}

void TlsEngine::receive(const uint8_t* data, size_t n) {
  if (!accept_first_bytes(data, n)) return;
  cipher_.keep_lent();
  cipher_.kept.append(reinterpret_cast<const char*>(data), n);
}

void TlsEngine::lend(const uint8_t* data, size_t n) {
  cipher_.keep_lent();  // a loan never outlives the call it was made for
  if (!accept_first_bytes(data, n)) return;
  cipher_.lent = data;
  cipher_.lent_len = n;
}

void TlsEngine::fail(Failure f, std::string detail) {
  if (failure_ != Failure::kNone) return;
  failure_ = f;
  detail_ = std::move(detail);
}

void TlsEngine::classify(int ssl_error) {
  if (failure_ != Failure::kNone) {  // decided in a callback (SNI)
    ERR_clear_error();
    return;
  }
  const long v = SSL_get_verify_result(ssl_);
  const unsigned long e = ERR_peek_error();
  const int reason = ERR_GET_REASON(e);
  std::string errors = openssl_errors();
  if (v != X509_V_OK) {
    fail(verify_failure(v), std::string("certificate verify failed: ") +
                                X509_verify_cert_error_string(v));
    return;
  }
  Failure f = Failure::kProtocol;
  if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE)
    f = Failure::kNoClientCertificate;
  else if (reason >= SSL_AD_REASON_OFFSET)
    f = Failure::kPeerAlert;
  else if (reason == SSL_R_WRONG_VERSION_NUMBER || reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
           reason == SSL_R_RECORD_LENGTH_MISMATCH || reason == SSL_R_HTTP_REQUEST)
    f = Failure::kNotTls;
  else if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING)
    f = Failure::kClosed;
  if (errors.empty()) errors = "SSL error " + std::to_string(ssl_error);
  fail(f, errors);
}

bool TlsEngine::handshake() {
  if (failure_ != Failure::kNone || peer_closed_) return false;
  if (done_) return true;
  ERR_clear_error();
  int r = SSL_do_handshake(ssl_);
  if (r != 1) {
    int err = SSL_get_error(ssl_, r);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return failure_ == Failure::kNone;
    classify(err);
    return false;
  }
  done_ = true;
  if (!pending_plain_.empty()) {
    std::string p;
    p.swap(pending_plain_);
    if (!send(reinterpret_cast<const uint8_t*>(p.data()), p.size())) return false;
  }
  return true;
}

long TlsEngine::read(uint8_t* out, size_t cap) {
  if (failure_ != Failure::kNone || peer_closed_) return -1;
  if (!done_ || cap == 0) return 0;
  ERR_clear_error();
  int r = SSL_read(ssl_, out, static_cast<int>(std::min<size_t>(cap, 1 << 30)));
  if (r > 0) return r;
  int err = SSL_get_error(ssl_, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return 0;
  if (err == SSL_ERROR_ZERO_RETURN) {
    peer_closed_ = true;
    return -1;
  }
  classify(err);
  return -1;
}

bool TlsEngine::has_buffered_plain() const {
  return SSL_pending(ssl_) > 0 || cipher_.in_pending() > 0;
}

bool TlsEngine::advance(const std::function<void(const uint8_t*, size_t)>& on_plain) {
  if (!handshake() || !done_) return failure_ == Failure::kNone && !peer_closed_;
  uint8_t buf[kReadChunk];
  while (true) {
    long n = read(buf, sizeof buf);
    if (n < 0) return false;
    if (n == 0) return true;
    on_plain(buf, static_cast<size_t>(n));
  }
}

bool TlsEngine::send(const uint8_t* data, size_t n) {
  if (failure_ != Failure::kNone) return false;
  if (!done_) {
    pending_plain_.append(reinterpret_cast<const char*>(data), n);
    return true;
  }
  while (n > 0) {
    ERR_clear_error();
    // A memory BIO takes everything, so one call per chunk writes it all.
    const int chunk = static_cast<int>(std::min<size_t>(n, 1 << 30));
    int r = SSL_write(ssl_, data, chunk);
    if (r <= 0) {
      classify(SSL_get_error(ssl_, r));
      return false;
    }
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

size_t TlsEngine::pending_output() const { return cipher_.out.size(); }

size_t TlsEngine::take_output(uint8_t* out, size_t cap) {
  const size_t n = std::min(cap, cipher_.out.size());
  std::memcpy(out, cipher_.out.data(), n);
  cipher_.out.erase(0, n);
  return n;
}

void TlsEngine::shutdown() {
  if (done_ && failure_ == Failure::kNone && !peer_closed_) {
    ERR_clear_error();
    SSL_shutdown(ssl_);
    ERR_clear_error();
  }
}

std::string TlsEngine::protocol() const { return done_ ? SSL_get_version(ssl_) : ""; }

std::string TlsEngine::peer_subject() const {
  const X509* x = SSL_get0_peer_certificate(ssl_);
  if (x == nullptr) return "";
  char buf[512];
  X509_NAME_oneline(X509_get_subject_name(x), buf, sizeof buf);
  return buf;
}

}  // namespace epochgate::proxy::tls
