// proxy/tls/tls_transport.cc
#include "proxy/tls/tls_transport.h"

#include <cstring>

#include "metrics/tls_metrics.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"

namespace epochgate::proxy::tls {

namespace {
// Ciphertext is read into one buffer per loop thread and handed to the
// engine's BIO at once, so an idle connection holds no read buffer.
constexpr size_t kScratchBytes = 64 * 1024;

uint8_t* scratch() {
  thread_local std::unique_ptr<uint8_t[]> buf(new uint8_t[kScratchBytes]);
  return buf.get();
}

void release(std::string& s) { release_cipher(s); }

int uv_status_of(Failure f) {
  switch (f) {
    case Failure::kTimeout: return UV_ETIMEDOUT;
    case Failure::kClosed: return UV_EOF;
    default: return UV_EPROTO;
  }
}
}  // namespace

TlsTransport::TlsTransport(uv_loop_t* loop, std::unique_ptr<Transport> inner,
                           std::unique_ptr<TlsEngine> engine, Side side,
                           uint32_t handshake_timeout_ms, metrics::TlsMetrics* metrics)
    : loop_(loop),
      inner_(std::move(inner)),
      engine_(std::move(engine)),
      side_(side),
      timeout_ms_(handshake_timeout_ms),
      metrics_(metrics) {
  inner_->set_user(*this);
  uv_timer_init(loop_, &deadline_);
  deadline_.data = this;
  uv_timer_init(loop_, &kick_);
  kick_.data = this;
}

TlsTransport::~TlsTransport() = default;

const char* TlsTransport::state_name(State s) {
  switch (s) {
    case State::kIdle: return "idle";
    case State::kHandshaking: return "handshaking";
    case State::kReady: return "ready";
    case State::kPlain: return "plain";
    case State::kFailed: return "failed";
    case State::kClosing: return "closing";
  }
  return "?";
}

int TlsTransport::start_handshake() {
  if (state_ != State::kIdle) return 0;
  state_ = State::kHandshaking;
  started_ns_ = now_ns();
  if (timeout_ms_ > 0) uv_timer_start(&deadline_, &TlsTransport::on_deadline, timeout_ms_, 0);
  int rc = inner_->start_reading();
  if (rc != 0) return rc;
  engine_->handshake();  // a client's ClientHello; a failure shows in progress()
  flush_cipher();
  kick();
  return 0;
}

int TlsTransport::start_reading() {
  user_reading_ = true;
  switch (state_) {
    case State::kIdle:
      return start_handshake();
    case State::kPlain:
      if (!stash_.empty()) {
        kick();
        return 0;
      }
      return inner_->start_reading();
    case State::kReady: {
      int rc = inner_->start_reading();
      if (rc != 0) return rc;
      // Plaintext OpenSSL decrypted while reading was paused.
      if (engine_->has_buffered_plain()) kick();
      return 0;
    }
    case State::kHandshaking:  // the socket is read anyway
    case State::kFailed:
    case State::kClosing:
      return 0;
  }
  return 0;
}

void TlsTransport::stop_reading() {
  user_reading_ = false;
  // During the handshake the socket is read whatever the user wants.
  if (state_ == State::kReady || state_ == State::kPlain) inner_->stop_reading();
}

void TlsTransport::on_transport_alloc(uv_buf_t* buf) {
  if (state_ == State::kPlain && user_) {
    user_->on_transport_alloc(buf);
    return;
  }
  buf->base = reinterpret_cast<char*>(scratch());
  buf->len = kScratchBytes;
}

void TlsTransport::on_transport_read(ssize_t n) {
  if (state_ == State::kClosing || state_ == State::kFailed) return;
  if (state_ == State::kPlain) {
    if (n < 0) user_reading_ = false;
    if (user_) user_->on_transport_read(n);
    return;
  }
  if (n > 0 && sniff_first_byte_ && scratch()[0] != 0x16) {
    // A plaintext client where plaintext is allowed: no TLS from here on.
    state_ = State::kPlain;
    sniff_first_byte_ = false;
    stash_.assign(reinterpret_cast<const char*>(scratch()), static_cast<size_t>(n));
    uv_timer_stop(&deadline_);
    inner_->stop_reading();
    tell_ready(0);
    if (state_ != State::kClosing) kick();
    return;
  }
  if (n > 0) sniff_first_byte_ = false;
  if (n < 0) {
    if (state_ != State::kReady) {
      handshake_failed(Failure::kClosed, n == UV_EOF ? "the peer closed the connection"
                                                     : std::string(uv_strerror(static_cast<int>(n))));
      return;
    }
    deliver_plain();  // whatever came before the close
    if (user_ && state_ != State::kClosing) {
      user_reading_ = false;
      user_->on_transport_read(n);
    }
    return;
  }
  // Decrypted straight from the loop's read buffer; what TLS leaves unread
  // (a partial record, reading paused) is kept by the engine.
  engine_->lend(scratch(), static_cast<size_t>(n));
  progress();
  engine_->keep_lent();
}

void TlsTransport::progress() {
  switch (state_) {
    case State::kIdle:
    case State::kFailed:
    case State::kClosing:
      return;
    case State::kPlain:
      deliver_stash();
      return;
    case State::kHandshaking: {
      bool ok = engine_->handshake();
      flush_cipher();
      if (!ok) {
        handshake_failed(engine_->failure(), engine_->detail());
        return;
      }
      if (!engine_->handshake_done()) return;
      state_ = State::kReady;
      uv_timer_stop(&deadline_);
      report_handshake(true);
      if (!user_reading_) inner_->stop_reading();
      tell_ready(0);
      if (state_ != State::kReady) return;  // the user closed it
      break;
    }
    case State::kReady:
      break;
  }
  deliver_plain();
  report_renegotiation();
  flush_cipher();  // TLS 1.3 tickets, key updates and no_renegotiation answer from inside reads
}

std::string TlsTransport::peer_text() const {
  std::string p = peer();
  if (!p.empty()) return p;
  // Never connected far enough to have an address: the name dialled (a
  // broker's server name) still says which one.
  const std::string& name = engine_->server_name();
  return name.empty() ? "(address unknown: connection already closed)" : "\"" + name + "\"";
}

void TlsTransport::report_renegotiation() {
  const int n = engine_->renegotiations_refused();
  if (n == renegotiations_seen_) return;
  renegotiations_seen_ = n;
  if (metrics_) metrics_->renegotiation_refused(side_);
  if (side_ == Side::kClient) {
    EPOCHGATE_PROXY_LOG(warn, "tls_client_renegotiation",
                        "TLS client {} asked to renegotiate: refused (no_renegotiation alert)",
                        peer_text());
  } else {
    EPOCHGATE_PROXY_LOG(warn, "tls_upstream_renegotiation",
                        "TLS broker {} asked to renegotiate: refused (no_renegotiation alert)",
                        peer_text());
  }
}

void TlsTransport::deliver_plain() {
  while (user_ && user_reading_ && state_ == State::kReady && engine_->has_buffered_plain()) {
    uv_buf_t b{};
    user_->on_transport_alloc(&b);
    if (b.len == 0) {
      user_reading_ = false;
      inner_->stop_reading();
      user_->on_transport_read(UV_ENOBUFS);
      return;
    }
    long n = engine_->read(reinterpret_cast<uint8_t*>(b.base), b.len);
    if (n > 0) {
      user_->on_transport_read(n);
      continue;
    }
    if (n == 0) return;
    user_reading_ = false;
    inner_->stop_reading();
    if (engine_->closed_by_peer()) {
      user_->on_transport_read(UV_EOF);
      return;
    }
    state_ = State::kFailed;
    if (side_ == Side::kClient) {
      EPOCHGATE_PROXY_LOG(warn, "tls_client_stream", "TLS error from client {}: {}", peer_text(),
                          engine_->detail());
    } else {
      EPOCHGATE_PROXY_LOG(warn, "tls_upstream_stream", "TLS error from broker {}: {}", peer_text(),
                          engine_->detail());
    }
    user_->on_transport_read(UV_EPROTO);
    return;
  }
}

void TlsTransport::deliver_stash() {
  while (user_ && user_reading_ && state_ == State::kPlain && !stash_.empty()) {
    uv_buf_t b{};
    user_->on_transport_alloc(&b);
    if (b.len == 0) {
      user_reading_ = false;
      user_->on_transport_read(UV_ENOBUFS);
      return;
    }
    const size_t k = std::min<size_t>(b.len, stash_.size());
    std::memcpy(b.base, stash_.data(), k);
    stash_.erase(0, k);
    user_->on_transport_read(static_cast<ssize_t>(k));
  }
  if (stash_.empty()) release(stash_);
  if (user_reading_ && stash_.empty() && state_ == State::kPlain) inner_->start_reading();
}

void TlsTransport::handshake_failed(Failure f, std::string detail, bool defer) {
  if (state_ != State::kIdle && state_ != State::kHandshaking) return;
  engine_->fail(f, std::move(detail));
  state_ = State::kFailed;
  flush_cipher();  // the alert, so the peer learns why
  uv_timer_stop(&deadline_);
  inner_->stop_reading();
  report_handshake(false);
  const int status = uv_status_of(engine_->failure());
  if (defer && user_ && ready_notice_ == ReadyNotice::kOwed) {
    ready_notice_ = ReadyNotice::kDeferred;
    deferred_status_ = status;
    uv_timer_start(&kick_, &TlsTransport::on_kick, 0, 0);
    return;
  }
  tell_ready(status);
}

void TlsTransport::tell_ready(int status) {
  if (user_ == nullptr || ready_notice_ != ReadyNotice::kOwed) return;
  ready_notice_ = ReadyNotice::kTold;
  user_->on_transport_ready(status);
}

void TlsTransport::report_handshake(bool ok) {
  const double seconds = static_cast<double>(now_ns() - started_ns_) / 1e9;
  const char* reason = ok ? "ok" : failure_name(engine_->failure());
  if (metrics_) metrics_->handshake(side_, reason, seconds);
  if (ok) return;
  const std::string& name = engine_->server_name();
  const std::string sni = name.empty() ? "" : " (server name \"" + name + "\")";
  if (side_ == Side::kClient) {
    EPOCHGATE_PROXY_LOG(warn, "tls_client_handshake",
                        "TLS handshake with client {} failed{}: {}: {}; connection closed", peer_text(),
                        sni, reason, engine_->detail());
  } else {
    EPOCHGATE_PROXY_LOG(warn, "tls_upstream_handshake",
                        "TLS handshake with broker {} failed: {}: {}; connection closed", peer_text(),
                        reason, engine_->detail());
  }
}

bool TlsTransport::encrypt(const uv_buf_t* bufs, unsigned nbufs, size_t& total) {
  total = 0;
  size_t plain = 0;
  for (unsigned i = 0; i < nbufs; ++i) plain += bufs[i].len;
  if (engine_->handshake_done()) engine_->reserve_output(plain);
  for (unsigned i = 0; i < nbufs; ++i) {
    if (!engine_->send(reinterpret_cast<const uint8_t*>(bufs[i].base), bufs[i].len)) return false;
    total += bufs[i].len;
  }
  return true;
}

ssize_t TlsTransport::try_write(const uv_buf_t* bufs, unsigned nbufs) {
  if (state_ == State::kPlain) return inner_->try_write(bufs, nbufs);
  if (state_ == State::kFailed || state_ == State::kClosing) return UV_EPROTO;
  if (state_ != State::kReady) return UV_EAGAIN;
  // Ciphertext still waits for the socket: the user keeps its bytes in its
  // own queue (watermarks and backpressure stay where they are counted).
  if (inner_writing_ || !queue_.empty()) return UV_EAGAIN;
  size_t total = 0;
  if (!encrypt(bufs, nbufs, total)) return UV_EPROTO;
  flush_cipher();
  return total > 0 ? static_cast<ssize_t>(total) : static_cast<ssize_t>(UV_EAGAIN);
}

int TlsTransport::write(const uv_buf_t* bufs, unsigned nbufs) {
  if (state_ == State::kPlain) return inner_->write(bufs, nbufs);
  if (state_ == State::kFailed || state_ == State::kClosing) return UV_EPROTO;
  size_t total = 0;
  if (!encrypt(bufs, nbufs, total)) return UV_EPROTO;
  user_write_pending_ = true;
  flush_cipher();
  kick();  // completes from the loop once the ciphertext is out
  return 0;
}

void TlsTransport::flush_cipher() {
  engine_->move_output(queue_);
  if (state_ == State::kClosing || inner_writing_ || queue_.empty()) return;
  uv_buf_t b = uv_buf_init(queue_.data(), static_cast<unsigned>(queue_.size()));
  ssize_t r = inner_->try_write(&b, 1);
  if (r > 0) queue_.erase(0, static_cast<size_t>(r));
  if (queue_.empty()) {
    release(queue_);
    return;
  }
  if (r < 0 && r != UV_EAGAIN) return;  // the socket failed: the read side reports it
  writing_.swap(queue_);
  release(queue_);
  b = uv_buf_init(writing_.data(), static_cast<unsigned>(writing_.size()));
  if (inner_->write(&b, 1) == 0) inner_writing_ = true;
}

void TlsTransport::on_transport_written(int status) {
  if (state_ == State::kPlain) {
    if (user_) user_->on_transport_written(status);
    return;
  }
  inner_writing_ = false;
  release(writing_);
  if (state_ == State::kClosing) return;
  if (status != 0) {
    if (user_write_pending_ && user_) {
      user_write_pending_ = false;
      user_->on_transport_written(status);
    }
    return;
  }
  flush_cipher();
  if (shutdown_pending_ && !inner_writing_ && queue_.empty()) {
    shutdown_pending_ = false;
    inner_->shutdown();
  }
  kick();
}

int TlsTransport::shutdown() {
  if (state_ == State::kPlain) return inner_->shutdown();
  engine_->shutdown();
  flush_cipher();
  if (!inner_writing_ && queue_.empty()) return inner_->shutdown();
  shutdown_pending_ = true;
  return 0;
}

void TlsTransport::kick() {
  if (state_ != State::kClosing) uv_timer_start(&kick_, &TlsTransport::on_kick, 0, 0);
}

void TlsTransport::on_kick(uv_timer_t* t) {
  auto* self = static_cast<TlsTransport*>(t->data);
  if (self->state_ == State::kClosing) return;
  if (self->ready_notice_ == ReadyNotice::kDeferred) {
    self->ready_notice_ = ReadyNotice::kOwed;
    self->tell_ready(self->deferred_status_);
    return;
  }
  self->progress();
  if (self->state_ == State::kClosing) return;
  if (self->user_write_pending_ && !self->inner_writing_ && self->queue_.empty() && self->user_) {
    self->user_write_pending_ = false;
    self->user_->on_transport_written(0);
  }
}

void TlsTransport::on_deadline(uv_timer_t* t) {
  auto* self = static_cast<TlsTransport*>(t->data);
  // Our own timer: already a loop callback, so the user hears it directly.
  if (self->state_ != State::kHandshaking) return;
  self->handshake_failed(Failure::kTimeout,
                         "no finished handshake within " + std::to_string(self->timeout_ms_) + " ms");
}

void TlsTransport::time_out(uint32_t after_ms) {
  if (state_ != State::kIdle && state_ != State::kHandshaking) return;
  handshake_failed(Failure::kTimeout,
                   "no finished handshake within " + std::to_string(after_ms) + " ms",
                   /*defer=*/true);
}

void TlsTransport::close() {
  if (state_ == State::kClosing) return;
  state_ = State::kClosing;
  open_handles_ = 3;
  auto closed = [](uv_handle_t* h) {
    auto* self = static_cast<TlsTransport*>(h->data);
    --self->open_handles_;
    self->maybe_closed();
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&deadline_), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&kick_), closed);
  inner_->close();
}

void TlsTransport::on_transport_closed() {
  --open_handles_;
  maybe_closed();
}

void TlsTransport::maybe_closed() {
  if (open_handles_ > 0 || user_ == nullptr) return;
  if (user_write_pending_) {
    user_write_pending_ = false;
    user_->on_transport_written(UV_ECANCELED);
  }
  user_->on_transport_closed();
}

}  // namespace epochgate::proxy::tls
