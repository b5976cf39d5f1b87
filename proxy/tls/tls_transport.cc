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
                           std::unique_ptr<TlsEngine> engine, const char* side,
                           uint32_t handshake_timeout_ms, metrics::TlsMetrics* metrics)
    : loop_(loop),
      inner_(std::move(inner)),
      engine_(std::move(engine)),
      side_(side),
      timeout_ms_(handshake_timeout_ms),
      metrics_(metrics) {
  inner_->set_user(*this);
  uv_timer_init(loop_, &timer_);
  timer_.data = this;
  uv_timer_init(loop_, &kick_);
  kick_.data = this;
}

TlsTransport::~TlsTransport() = default;

int TlsTransport::start_handshake() {
  if (started_) return 0;
  started_ = true;
  started_ns_ = now_ns();
  if (timeout_ms_ > 0) uv_timer_start(&timer_, &TlsTransport::on_timer, timeout_ms_, 0);
  int rc = inner_->start_reading();
  if (rc != 0) return rc;
  engine_->handshake();  // a client's ClientHello; a failure shows in progress()
  flush_cipher();
  kick();
  return 0;
}

int TlsTransport::start_reading() {
  user_reading_ = true;
  if (plain_) {
    if (!stash_.empty()) {
      kick();
      return 0;
    }
    return inner_->start_reading();
  }
  if (!started_) return start_handshake();
  if (ready()) {
    int rc = inner_->start_reading();
    if (rc != 0) return rc;
    // Plaintext OpenSSL decrypted while reading was paused.
    if (engine_->has_buffered_plain()) kick();
  }
  return 0;
}

void TlsTransport::stop_reading() {
  user_reading_ = false;
  if (plain_) {
    inner_->stop_reading();
    return;
  }
  // During the handshake the socket is read whatever the user wants.
  if (ready()) inner_->stop_reading();
}

void TlsTransport::on_transport_alloc(uv_buf_t* buf) {
  if (plain_ && user_) {
    user_->on_transport_alloc(buf);
    return;
  }
  buf->base = reinterpret_cast<char*>(scratch());
  buf->len = kScratchBytes;
}

void TlsTransport::on_transport_read(ssize_t n) {
  if (closing_ || failed_) return;
  if (plain_) {
    if (n < 0) user_reading_ = false;
    if (user_) user_->on_transport_read(n);
    return;
  }
  if (n > 0 && !seen_bytes_ && allow_plaintext_ && scratch()[0] != 0x16) {
    // A plaintext client where plaintext is allowed: no TLS from here on.
    plain_ = true;
    seen_bytes_ = true;
    stash_.assign(reinterpret_cast<const char*>(scratch()), static_cast<size_t>(n));
    uv_timer_stop(&timer_);
    inner_->stop_reading();
    if (user_ && !ready_told_) {
      ready_told_ = true;
      user_->on_transport_ready(0);
    }
    if (!closing_) kick();
    return;
  }
  if (n > 0) seen_bytes_ = true;
  if (n < 0) {
    if (!engine_->handshake_done()) {
      handshake_failed(Failure::kClosed, n == UV_EOF ? "the peer closed the connection"
                                                     : std::string(uv_strerror(static_cast<int>(n))));
      return;
    }
    deliver_plain();  // whatever came before the close
    if (user_ && !closing_) {
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
  if (closing_ || failed_) return;
  if (plain_) {
    deliver_stash();
    return;
  }
  if (!engine_->handshake_done()) {
    bool ok = engine_->handshake();
    flush_cipher();
    if (!ok) {
      handshake_failed(engine_->failure(), engine_->detail());
      return;
    }
    if (!engine_->handshake_done()) return;
    uv_timer_stop(&timer_);
    report_handshake(true);
    if (!user_reading_) inner_->stop_reading();
    if (!ready_told_ && user_) {
      ready_told_ = true;
      user_->on_transport_ready(0);
      if (closing_) return;
    }
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
  if (side_[0] == 'c') {
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
  while (user_ && user_reading_ && !closing_ && !failed_ && engine_->has_buffered_plain()) {
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
    failed_ = true;
    if (side_[0] == 'c') {
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
  while (user_ && user_reading_ && !closing_ && !stash_.empty()) {
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
  if (user_reading_ && stash_.empty() && !closing_) inner_->start_reading();
}

void TlsTransport::handshake_failed(Failure f, std::string detail, bool defer) {
  if (failed_) return;
  engine_->fail(f, std::move(detail));
  failed_ = true;
  flush_cipher();  // the alert, so the peer learns why
  uv_timer_stop(&timer_);
  inner_->stop_reading();
  report_handshake(false);
  if (user_ && !ready_told_) {
    ready_told_ = true;
    if (defer) {
      ready_deferred_ = uv_status_of(engine_->failure());
      uv_timer_start(&kick_, &TlsTransport::on_kick, 0, 0);
      return;
    }
    user_->on_transport_ready(uv_status_of(engine_->failure()));
  }
}

void TlsTransport::report_handshake(bool ok) {
  if (reported_) return;
  reported_ = true;
  const double seconds = static_cast<double>(now_ns() - started_ns_) / 1e9;
  const char* reason = ok ? "ok" : failure_name(engine_->failure());
  if (metrics_) metrics_->handshake(side_, reason, seconds);
  if (ok) return;
  const std::string& name = engine_->server_name();
  const std::string sni = name.empty() ? "" : " (server name \"" + name + "\")";
  if (side_[0] == 'c') {
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
  if (plain_) return inner_->try_write(bufs, nbufs);
  if (failed_ || closing_) return UV_EPROTO;
  if (!ready()) return UV_EAGAIN;
  // Ciphertext still waits for the socket: the user keeps its bytes in its
  // own queue (watermarks and backpressure stay where they are counted).
  if (inner_writing_ || !queue_.empty()) return UV_EAGAIN;
  size_t total = 0;
  if (!encrypt(bufs, nbufs, total)) return UV_EPROTO;
  flush_cipher();
  return total > 0 ? static_cast<ssize_t>(total) : static_cast<ssize_t>(UV_EAGAIN);
}

int TlsTransport::write(const uv_buf_t* bufs, unsigned nbufs) {
  if (plain_) return inner_->write(bufs, nbufs);
  if (failed_ || closing_) return UV_EPROTO;
  size_t total = 0;
  if (!encrypt(bufs, nbufs, total)) return UV_EPROTO;
  user_write_pending_ = true;
  flush_cipher();
  kick();  // completes from the loop once the ciphertext is out
  return 0;
}

void TlsTransport::flush_cipher() {
  engine_->move_output(queue_);
  if (closing_ || inner_writing_ || queue_.empty()) return;
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
  if (plain_) {
    if (user_ && !closing_) user_->on_transport_written(status);
    return;
  }
  inner_writing_ = false;
  release(writing_);
  if (closing_) return;
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
  if (plain_) return inner_->shutdown();
  engine_->shutdown();
  flush_cipher();
  if (!inner_writing_ && queue_.empty()) return inner_->shutdown();
  shutdown_pending_ = true;
  return 0;
}

void TlsTransport::kick() {
  if (!closing_) uv_timer_start(&kick_, &TlsTransport::on_kick, 0, 0);
}

void TlsTransport::on_kick(uv_timer_t* t) {
  auto* self = static_cast<TlsTransport*>(t->data);
  if (self->closing_) return;
  if (self->ready_deferred_ != 0) {
    const int status = self->ready_deferred_;
    self->ready_deferred_ = 0;
    if (self->user_) self->user_->on_transport_ready(status);
    return;
  }
  self->progress();
  if (self->closing_) return;
  if (self->user_write_pending_ && !self->inner_writing_ && self->queue_.empty() && self->user_) {
    self->user_write_pending_ = false;
    self->user_->on_transport_written(0);
  }
}

void TlsTransport::on_timer(uv_timer_t* t) {
  auto* self = static_cast<TlsTransport*>(t->data);
  // Our own timer: already a loop callback, so the user hears it directly.
  if (self->engine_->handshake_done() || self->failed_ || self->closing_ || self->plain_) return;
  self->handshake_failed(Failure::kTimeout,
                         "no finished handshake within " + std::to_string(self->timeout_ms_) + " ms");
}

void TlsTransport::time_out(uint32_t after_ms) {
  if (engine_->handshake_done() || failed_ || closing_ || plain_) return;
  handshake_failed(Failure::kTimeout,
                   "no finished handshake within " + std::to_string(after_ms) + " ms",
                   /*defer=*/true);
}

void TlsTransport::close() {
  if (closing_) return;
  closing_ = true;
  open_handles_ = 3;
  auto closed = [](uv_handle_t* h) {
    auto* self = static_cast<TlsTransport*>(h->data);
    --self->open_handles_;
    self->maybe_closed();
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), closed);
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
