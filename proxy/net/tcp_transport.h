// proxy/net/tcp_transport.h: the plain TCP Transport: one uv_tcp_t, read straight
// into the user's room, uv_try_write / uv_write of the user's buffers. Owns
// the socket handle and its write and shutdown requests; never copies or
// buffers bytes (writes_in_place() is true), never parses them.
#pragma once

#include <uv.h>

#include <string>

#include "proxy/net/transport.h"

namespace epochgate::proxy {

/// A libuv TCP stream as a Transport. TCP_NODELAY is set once the socket is
/// open or connected: Connection coalesces a batch into one write itself.
class TcpTransport final : public Transport {
 public:
  explicit TcpTransport(uv_loop_t* loop);
  ~TcpTransport() override = default;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  /// Takes over a connected socket (an accepted client). Returns 0 or a uv
  /// error; on error the caller still owns `fd`, and close() is still due.
  int open(uv_os_sock_t fd);
  /// The handle for uv_tcp_connect or uv_accept (the upstream dialer and the
  /// test rigs connect it themselves, then call connected()). Never used for
  /// reads or writes from outside.
  uv_tcp_t* handle() { return &tcp_; }
  /// handle() got connected from outside (connect or accept succeeded).
  void connected();

  void set_user(TransportUser& user) override { user_ = &user; }
  int start_reading() override;
  void stop_reading() override;
  bool ready() const override { return true; }
  ssize_t try_write(const uv_buf_t* bufs, unsigned nbufs) override;
  int write(const uv_buf_t* bufs, unsigned nbufs) override;
  bool writes_in_place() const override { return true; }
  int shutdown() override;
  void close() override;
  int splice_fd() const override;
  void took_turn() override { turn_taken_ = true; }
  std::string peer() const override;
  bool peer_closed() const override;
  bool peer_reset() const override;

 private:
  /// The socket's TCP state (TCP_INFO's tcpi_state: TCP_CLOSE_WAIT, ...), or
  /// -1 when closing or unknown.
  int tcp_state() const;
  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&tcp_); }
  static void on_alloc(uv_handle_t* h, size_t suggested, uv_buf_t* buf);
  static void on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void on_write(uv_write_t* req, int status);
  static void on_close(uv_handle_t* h);

  std::string lookup_peer() const;  // getpeername now; "" when not connected

  uv_tcp_t tcp_;
  std::string peer_;  // "host:port" once connected (open() or connected())
  uv_write_t write_req_;
  uv_shutdown_t shutdown_req_;
  TransportUser* user_ = nullptr;
  bool reading_ = false;
  bool closing_ = false;
  bool shutting_down_ = false;
  bool turn_taken_ = false;  // the user read the socket in this alloc: keep reading
};

}  // namespace epochgate::proxy
