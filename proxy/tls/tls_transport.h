// proxy/tls/tls_transport.h: TLS as a Transport (proxy/net/transport.h): a
// TlsEngine (its cipher BIO) over an inner Transport carrying the ciphertext
// (TcpTransport). Drives the handshake, with its own deadline on the
// client-facing side, and reports it once: a success is counted with its
// duration; a failure closes this connection only, counted by reason in
// epochgate_tls_handshakes_total and logged (rate-limited) with the peer
// and the reason. Holds the ciphertext the socket has not taken yet; never
// parses Kafka and never sees another connection's bytes.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "metrics/side.h"
#include "proxy/net/transport.h"
#include "proxy/tls/tls_engine.h"

namespace epochgate::metrics {
class TlsMetrics;
}

namespace epochgate::proxy::tls {

/// A TLS session over another transport.
class TlsTransport final : public Transport, private TransportUser {
 public:
  /// Where the connection stands. Every state but kClosing ends only by
  /// the arrows below; close() goes to kClosing from any of them.
  ///
  ///   kIdle --start_handshake() or start_reading()--> kHandshaking
  ///   kHandshaking --handshake done--> kReady
  ///   kHandshaking --first byte not a TLS record, allow_plaintext()--> kPlain
  ///   kIdle, kHandshaking --failed, timed out, peer closed--> kFailed
  ///   kReady --a TLS error in the stream--> kFailed
  enum class State : uint8_t {
    kIdle,         ///< nothing sent or read yet
    kHandshaking,  ///< the socket is read whatever the user wants; no user bytes pass
    kReady,        ///< handshake done: plaintext both ways through the engine
    kPlain,        ///< a plaintext peer where allowed: bytes pass through untouched
    kFailed,       ///< counted, logged and told; nothing passes any more
    kClosing,      ///< close() called: waiting for the inner transport and the timers
  };

  /// Which connection this is: kClient, a client's to epochgate (epochgate
  /// is the TLS server), or kUpstream, epochgate's to a broker; it names the
  /// `side` label of the TLS metrics and the peer in log lines.
  using Side = metrics::Side;

  /// `handshake_timeout_ms` 0: no deadline of its own (the upstream dial
  /// has one). `metrics` may be null.
  TlsTransport(uv_loop_t* loop, std::unique_ptr<Transport> inner,
               std::unique_ptr<TlsEngine> engine, Side side,
               uint32_t handshake_timeout_ms, metrics::TlsMetrics* metrics);
  ~TlsTransport() override;
  TlsTransport(const TlsTransport&) = delete;
  TlsTransport& operator=(const TlsTransport&) = delete;

  /// Starts the handshake without delivering bytes to the user (SNI
  /// routing waits for the server name before a session exists).
  int start_handshake();
  const TlsEngine& engine() const { return *engine_; }
  /// tls.plaintext_clients: a connection whose first byte is not a TLS
  /// record (0x16) carries plaintext from then on instead of failing
  /// (`not_tls`). Call before reading starts, for loopback peers only.
  void allow_plaintext() { sniff_first_byte_ = true; }
  /// Fails a handshake still running as timed out (the owner's deadline,
  /// e.g. the upstream dial's): counted and logged as `timeout` now; the
  /// user hears on_transport_ready(UV_ETIMEDOUT) later from the loop, like
  /// every other callback (never from inside this call), unless it closes
  /// the transport first.
  void time_out(uint32_t after_ms);
  /// True once the connection turned out to be plaintext (until closed).
  bool plaintext() const { return state_ == State::kPlain; }
  State state() const { return state_; }
  /// Stable lower-case name of `s` ("handshaking", ...), for tests and logs.
  static const char* state_name(State s);

  void set_user(TransportUser& user) override { user_ = &user; }
  int start_reading() override;
  void stop_reading() override;
  bool ready() const override { return state_ == State::kReady || state_ == State::kPlain; }
  ssize_t try_write(const uv_buf_t* bufs, unsigned nbufs) override;
  int write(const uv_buf_t* bufs, unsigned nbufs) override;
  /// TLS encrypts what try_write()/write() get before they return, keeping
  /// no reference to it, so users may write straight from their buffers.
  bool writes_in_place() const override { return true; }
  /// False: TLS 1.2 has no half-close (a close_notify is answered by one,
  /// and what follows is not read), and a bare FIN ends the session too.
  bool writes_after_peer_eof() const override { return false; }
  int shutdown() override;
  void close() override;
  std::string peer() const override { return inner_->peer(); }
  /// peer() for log lines: never empty.
  std::string peer_text() const;
  bool peer_closed() const override { return inner_->peer_closed(); }
  bool peer_reset() const override { return inner_->peer_reset(); }

 private:
  // TransportUser of the inner transport (ciphertext).
  void on_transport_alloc(uv_buf_t* buf) override;
  void on_transport_read(ssize_t n) override;
  void on_transport_written(int status) override;
  void on_transport_ready(int) override {}
  void on_transport_closed() override;

  /// Encrypts `bufs`; false when the engine failed.
  bool encrypt(const uv_buf_t* bufs, unsigned nbufs, size_t& total);
  /// Moves the engine's ciphertext to the socket (try_write, then a write).
  void flush_cipher();
  /// After new ciphertext arrived or reading resumed: handshake, plaintext.
  void progress();
  void deliver_plain();
  void deliver_stash();
  /// kIdle or kHandshaking to kFailed: counts, logs and tells the user
  /// (`defer`: from the loop via kick_). No-op in any other state.
  void handshake_failed(Failure f, std::string detail, bool defer = false);
  /// Counts the handshake's result (once: only the two ways out of
  /// kHandshaking call it) and logs a failure.
  void report_handshake(bool ok);
  /// Tells the user on_transport_ready(`status`) if it is still owed.
  void tell_ready(int status);
  /// Counts and logs renegotiations the engine refused since the last call.
  void report_renegotiation();
  /// Runs progress() from the loop soon (never inside the user's call).
  void kick();
  static void on_deadline(uv_timer_t* t);
  static void on_kick(uv_timer_t* t);
  void maybe_closed();

  uv_loop_t* loop_;
  std::unique_ptr<Transport> inner_;
  std::unique_ptr<TlsEngine> engine_;
  Side side_;
  uint32_t timeout_ms_;
  metrics::TlsMetrics* metrics_;
  TransportUser* user_ = nullptr;
  uv_timer_t deadline_;  // the handshake's own deadline (handshake_timeout_ms)
  uv_timer_t kick_;      // runs deferred work from the loop: progress(), a written
                         // user write, a deferred ready notice
  State state_ = State::kIdle;
  /// Whether the user heard on_transport_ready(): once, at kReady, kPlain
  /// or kFailed; kDeferred: a failure the next kick_ tells (`deferred_status_`).
  enum class ReadyNotice : uint8_t { kOwed, kDeferred, kTold };
  ReadyNotice ready_notice_ = ReadyNotice::kOwed;
  int deferred_status_ = 0;
  std::string queue_;    // ciphertext not yet handed to the inner transport
  std::string writing_;  // ciphertext of the inner write in flight
  bool inner_writing_ = false;       // an inner write() is in flight (`writing_`)
  bool user_write_pending_ = false;  // the user's write() completes when the cipher drains
  bool user_reading_ = false;        // the user wants bytes (start_reading)
  bool shutdown_pending_ = false;    // shut the inner side down once the cipher drained
  // allow_plaintext() and no byte read yet: the first byte decides TLS or plaintext.
  bool sniff_first_byte_ = false;
  std::string stash_;        // a plaintext peer's first bytes, not yet delivered
  int renegotiations_seen_ = 0;
  int open_handles_ = 0;  // inner + two timers while closing
  uint64_t started_ns_ = 0;
};

}  // namespace epochgate::proxy::tls
