// proxy/tls/tls_engine.h: one TLS connection's state machine over memory
// BIOs (RFC 8446 / RFC 5246 through OpenSSL): ciphertext read from the
// socket goes in, plaintext comes out; plaintext to send goes in,
// ciphertext for the socket comes out. Owns the SSL object; knows nothing
// of libuv or Kafka, so the transport (proxy/tls/tls_transport.h) and the
// unit tests drive it alike. Classifies a failed handshake into a bounded
// reason (metric label) and a detail line (log). Never logs by itself.
#pragma once

#include <openssl/ssl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/tls/cipher_bio.h"
#include "proxy/tls/tls_context.h"

namespace epochgate::proxy::tls {

/// Why a handshake failed, as the metric label says it. Bounded set.
enum class Failure {
  kNone,
  kNotTls,               ///< the first bytes are not a TLS record (a plaintext Kafka request)
  kUnknownCa,            ///< the peer's chain does not lead to a trusted CA
  kExpired,              ///< a certificate's notAfter has passed
  kNotYetValid,          ///< a certificate's notBefore is in the future
  kHostnameMismatch,     ///< the broker's certificate does not name the dialled host
  kNoClientCertificate,  ///< client_auth: required and the client sent none
  kBadCertificate,       ///< any other verification failure
  kUnknownServerName,    ///< SNI routing: the name fits no broker name nor the bootstrap's
  kUnknownNode,          ///< SNI routing: a broker name whose node the cluster's metadata lacks
  kPeerAlert,            ///< the peer refused the handshake (alert received)
  kClosed,               ///< the peer closed before the handshake finished
  kTimeout,              ///< not finished within the deadline (set by the transport)
  kProtocol,             ///< any other TLS error (versions, ciphers, malformed)
};
/// The label of `f` ("not_tls", "unknown_ca", ..., "ok" for kNone).
const char* failure_name(Failure f);

/// A TLS session on memory BIOs.
class TlsEngine {
 public:
  /// Server name -> node id for one-port SNI routing (nullopt: refuse).
  using SniRoute = std::function<std::optional<int32_t>(std::string_view name)>;
  /// Whether broker node `node_id` exists now (the cluster's current
  /// metadata); asked for every routed name except the bootstrap's.
  using NodeExists = std::function<bool(int32_t node_id)>;

  /// Client side: SNI `host` (DNS names only, RFC 6066), and with the
  /// context's verify_hostname the certificate must name `host` (a DNS name
  /// or an IP address literal, RFC 6125).
  static std::unique_ptr<TlsEngine> client(std::shared_ptr<const TlsContext> ctx,
                                           const std::string& host);
  /// Server side; with `route`, the ClientHello's server name must map to a
  /// node (routed_node() then says which), else the handshake fails with an
  /// unrecognized_name alert (RFC 6066 section 3): `unknown_server_name`;
  /// with `exists` too, a broker node (id >= 0) must exist at that moment,
  /// else the same alert and `unknown_node`.
  static std::unique_ptr<TlsEngine> server(std::shared_ptr<const TlsContext> ctx,
                                           SniRoute route = nullptr, NodeExists exists = nullptr);
  ~TlsEngine();
  TlsEngine(const TlsEngine&) = delete;
  TlsEngine& operator=(const TlsEngine&) = delete;

  /// Hands bytes read from the socket to TLS (copied). Then call advance().
  void receive(const uint8_t* data, size_t n);
  /// Lends bytes read from the socket to TLS without copying them: they
  /// must stay valid until keep_lent(), which copies whatever handshake(),
  /// read() and advance() left unread. The transport's hot path.
  void lend(const uint8_t* data, size_t n);
  /// Ends a loan from lend() (see there).
  void keep_lent() { cipher_.keep_lent(); }
  /// Runs the handshake and decrypts what arrived: every plaintext byte is
  /// passed to `on_plain` (possibly several calls). False when the
  /// connection failed (failure()/detail() say why) or the peer sent
  /// close_notify (closed_by_peer()). Either way, send what
  /// pending_output() holds (an alert) before closing.
  bool advance(const std::function<void(const uint8_t*, size_t)>& on_plain);
  /// Runs the handshake with what arrived so far (output may follow). True
  /// while the connection is usable (done or waiting for bytes), false when
  /// it failed.
  bool handshake();
  /// Decrypts into `out` (up to `cap` bytes): the count, 0 when more
  /// ciphertext is needed, -1 when the connection failed or the peer sent
  /// close_notify (closed_by_peer()). Only once handshake_done().
  long read(uint8_t* out, size_t cap);
  /// Decrypted bytes OpenSSL holds that read() returns without new input.
  bool has_buffered_plain() const;
  /// Encrypts `n` plaintext bytes; before the handshake is done they wait
  /// inside the engine and go out when it completes (advance()).
  bool send(const uint8_t* data, size_t n);
  /// Ciphertext waiting for the socket.
  size_t pending_output() const;
  /// Moves up to `cap` ciphertext bytes into `out`; returns how many.
  size_t take_output(uint8_t* out, size_t cap);
  /// Moves all ciphertext to the end of `dst` without copying when `dst` is empty.
  void move_output(std::string& dst) { cipher_.move_out(dst); }
  /// Before send()ing `plain_bytes`: room for their records in one piece.
  void reserve_output(size_t plain_bytes) { cipher_.reserve_out(plain_bytes); }
  /// Queues close_notify (best effort) for a clean close.
  void shutdown();

  bool handshake_done() const { return done_; }
  bool closed_by_peer() const { return peer_closed_; }
  Failure failure() const { return failure_; }
  /// The OpenSSL reason and verification result, for the log line.
  const std::string& detail() const { return detail_; }
  /// Marks the handshake failed by the transport (timeout, socket closed).
  void fail(Failure f, std::string detail);
  /// SNI routing: the node the server name chose (server side, after the ClientHello).
  std::optional<int32_t> routed_node() const { return routed_; }
  /// The ClientHello's server name ("" if none) once received.
  const std::string& server_name() const { return server_name_; }
  /// How many times the peer asked to renegotiate (a TLS 1.2 ClientHello
  /// or HelloRequest after the handshake) and OpenSSL answered with a
  /// no_renegotiation alert (SSL_OP_NO_RENEGOTIATION); the connection goes on.
  int renegotiations_refused() const { return renegotiations_refused_; }
  /// Negotiated protocol ("TLSv1.3") once done.
  std::string protocol() const;
  /// Peer certificate subject (RFC 2253), "" if none.
  std::string peer_subject() const;

  /// Installed on server contexts: the SNI decision (OpenSSL servername callback).
  static int on_server_name(SSL* ssl, int* alert, void* arg);

 private:
  TlsEngine(std::shared_ptr<const TlsContext> ctx, SSL* ssl);
  void classify(int ssl_error);
  static void on_info(const SSL* ssl, int where, int ret);

  std::shared_ptr<const TlsContext> ctx_;
  SSL* ssl_;
  CipherBuffers cipher_;  // ciphertext both ways, behind the SSL's BIO
  SniRoute route_;
  NodeExists exists_;
  std::string pending_plain_;  // sent before the handshake finished
  std::optional<int32_t> routed_;
  std::string server_name_;
  bool server_ = false;
  bool first_bytes_seen_ = false;
  /// The first-byte check of a server (not_tls); false when it failed.
  bool accept_first_bytes(const uint8_t* data, size_t n);
  bool done_ = false;
  bool peer_closed_ = false;
  int renegotiations_refused_ = 0;
  Failure failure_ = Failure::kNone;
  std::string detail_;
};

}  // namespace epochgate::proxy::tls
