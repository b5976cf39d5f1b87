// tests/proxy/fake_transport.h: an in-memory Transport for unit tests of the
// layers above it (Connection, Session). The test plays the socket: it feeds
// the bytes the peer sends, decides how much a write takes and when it
// completes, and runs the transport's callbacks with pump(), as a libuv loop
// would (never from inside a Transport call). Owns nothing outside the test.
#pragma once

#include <uv.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "proxy/net/transport.h"

namespace epochgate::proxy::testing {

class FakeTransport final : public Transport {
 public:
  /// `handshake`: ready() stays false until finish_handshake().
  /// `in_place`: what writes_in_place() answers.
  explicit FakeTransport(bool handshake = false, bool in_place = true)
      : ready_(!handshake), in_place_(in_place) {}

  // ---- the test's side of the socket ----
  /// Bytes the peer sent; delivered by pump() while the user reads.
  void peer_sends(const std::string& bytes) { inbound_ += bytes; }
  void peer_sends(const void* p, size_t n) { inbound_.append(static_cast<const char*>(p), n); }
  /// The peer closes: after its bytes, the user reads UV_EOF.
  void peer_closes() { peer_closed_ = true; }
  /// The peer resets the connection (after its FIN or instead of it).
  void peer_resets() { peer_closed_ = true; peer_reset_ = true; }
  /// Bytes the user got onto the "wire" so far (completed writes only).
  const std::string& sent() const { return sent_; }
  /// Also receives every byte sent; owned by the test, so it can still be
  /// read after the user destroyed this transport.
  std::string* sent_log = nullptr;
  std::string take_sent() { return std::exchange(sent_, {}); }
  /// How many bytes try_write() takes from now on (0: UV_EAGAIN).
  void set_try_write_limit(size_t n) { try_limit_ = n; }
  /// When false, write() stays in flight until complete_write().
  void set_auto_complete(bool on) { auto_complete_ = on; }
  bool write_in_flight() const { return !pending_.empty() || writing_; }
  /// Completes the write in flight: its bytes reach sent() (read now, so a
  /// user that changed them too early is caught) and the user hears `status`.
  void complete_write(int status = 0) {
    if (!writing_) return;
    writing_ = false;
    if (status == 0)
      for (const uv_buf_t& b : pending_) {
        sent_.append(b.base, b.len);
        if (sent_log) sent_log->append(b.base, b.len);
      }
    pending_.clear();
    user_->on_transport_written(status);
  }
  /// The handshake ends: ready from now on (status 0) or failed.
  void finish_handshake(int status) {
    if (status == 0) ready_ = true;
    user_->on_transport_ready(status);
  }
  /// Runs what a loop iteration would: a finished close, auto-completed
  /// writes, inbound bytes while reading. Returns false once closed (the
  /// user may have destroyed this transport: touch nothing after).
  bool pump() {
    if (closing_) {
      if (writing_) {
        writing_ = false;
        pending_.clear();
        user_->on_transport_written(UV_ECANCELED);
      }
      user_->on_transport_closed();
      return false;
    }
    if (writing_ && auto_complete_) complete_write(0);
    while (reading_ && ready_ && !inbound_.empty() && !closing_) {
      uv_buf_t buf{nullptr, 0};
      user_->on_transport_alloc(&buf);
      if (buf.len == 0) {
        reading_ = false;
        user_->on_transport_read(UV_ENOBUFS);
        break;
      }
      size_t n = std::min(buf.len, inbound_.size());
      std::memcpy(buf.base, inbound_.data(), n);
      inbound_.erase(0, n);
      ++reads_;
      user_->on_transport_read(static_cast<ssize_t>(n));
    }
    if (reading_ && ready_ && inbound_.empty() && peer_closed_ && !eof_sent_ && !closing_) {
      eof_sent_ = true;
      reading_ = false;
      user_->on_transport_read(UV_EOF);
    }
    return true;
  }
  bool reading() const { return reading_; }
  bool closing() const { return closing_; }
  bool shut_down() const { return shut_down_; }
  int reads() const { return reads_; }
  int try_writes() const { return try_writes_; }
  int writes() const { return writes_; }

  // ---- Transport ----
  void set_user(TransportUser& user) override { user_ = &user; }
  int start_reading() override {
    if (!closing_) reading_ = true;
    return 0;
  }
  void stop_reading() override { reading_ = false; }
  bool ready() const override { return ready_; }
  ssize_t try_write(const uv_buf_t* bufs, unsigned nbufs) override {
    ++try_writes_;
    if (closing_) return UV_EPIPE;
    size_t room = try_limit_, took = 0;
    for (unsigned i = 0; i < nbufs && room > 0; ++i) {
      size_t n = std::min(room, bufs[i].len);
      sent_.append(bufs[i].base, n);
      if (sent_log) sent_log->append(bufs[i].base, n);
      room -= n;
      took += n;
    }
    return took == 0 ? static_cast<ssize_t>(UV_EAGAIN) : static_cast<ssize_t>(took);
  }
  int write(const uv_buf_t* bufs, unsigned nbufs) override {
    ++writes_;
    if (closing_) return UV_EPIPE;
    if (writing_) return UV_EBUSY;  // one write at a time (the contract)
    pending_.assign(bufs, bufs + nbufs);  // read at completion, as a socket would
    writing_ = true;
    return 0;
  }
  bool writes_in_place() const override { return in_place_; }
  int shutdown() override {
    shut_down_ = true;
    return 0;
  }
  void close() override { closing_ = true; }
  std::string peer() const override { return "fake:1"; }
  bool peer_closed() const override { return peer_closed_; }
  bool peer_reset() const override { return peer_reset_; }

 private:
  TransportUser* user_ = nullptr;
  std::string inbound_;
  std::string sent_;
  std::vector<uv_buf_t> pending_;
  size_t try_limit_ = SIZE_MAX;
  bool ready_;
  bool in_place_;
  bool auto_complete_ = true;
  bool writing_ = false;
  bool reading_ = false;
  bool closing_ = false;
  bool peer_closed_ = false;
  bool peer_reset_ = false;
  bool eof_sent_ = false;
  bool shut_down_ = false;
  int reads_ = 0;
  int try_writes_ = 0;
  int writes_ = 0;
};

}  // namespace epochgate::proxy::testing
