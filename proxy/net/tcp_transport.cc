// proxy/net/tcp_transport.cc
#include "proxy/net/tcp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <utility>

namespace epochgate::proxy {

TcpTransport::TcpTransport(uv_loop_t* loop) {
  uv_tcp_init(loop, &tcp_);
  tcp_.data = this;
  write_req_.data = this;
  shutdown_req_.data = this;
}

int TcpTransport::open(uv_os_sock_t fd) {
  int rc = uv_tcp_open(&tcp_, fd);
  if (rc == 0) uv_tcp_nodelay(&tcp_, 1);
  if (rc == 0) peer_ = lookup_peer();
  return rc;
}

void TcpTransport::connected() {
  uv_tcp_nodelay(&tcp_, 1);
  peer_ = lookup_peer();
}

int TcpTransport::start_reading() {
  if (reading_ || closing_) return 0;
  int rc = uv_read_start(stream(), &TcpTransport::on_alloc, &TcpTransport::on_read);
  if (rc == 0) reading_ = true;
  return rc;
}

void TcpTransport::stop_reading() {
  if (!reading_) return;
  uv_read_stop(stream());
  reading_ = false;
}

void TcpTransport::on_alloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* t = static_cast<TcpTransport*>(h->data);
  buf->base = nullptr;
  buf->len = 0;
  t->user_->on_transport_alloc(buf);
  if (buf->len == 0) buf->base = nullptr;  // libuv reports UV_ENOBUFS
}

void TcpTransport::on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
  auto* t = static_cast<TcpTransport*>(s->data);
  const bool turn = std::exchange(t->turn_taken_, false);
  // EAGAIN: nothing read, which matters only to a user that took the turn
  // (what it moved is still to be reported).
  if (nread == 0 && !turn) return;
  // No room because the user read the socket itself: reading goes on.
  if (nread < 0 && !(turn && nread == UV_ENOBUFS)) t->stop_reading();
  t->user_->on_transport_read(nread);
}

ssize_t TcpTransport::try_write(const uv_buf_t* bufs, unsigned nbufs) {
  if (closing_) return UV_EPIPE;
  return uv_try_write(stream(), bufs, nbufs);
}

int TcpTransport::write(const uv_buf_t* bufs, unsigned nbufs) {
  if (closing_) return UV_EPIPE;
  return uv_write(&write_req_, stream(), bufs, nbufs, &TcpTransport::on_write);
}

void TcpTransport::on_write(uv_write_t* req, int status) {
  auto* t = static_cast<TcpTransport*>(req->data);
  t->user_->on_transport_written(status);
}

int TcpTransport::shutdown() {
  if (closing_ || shutting_down_) return 0;
  // Errors of the FIN itself show up as a read error or a later close; the
  // user learns nothing more from the shutdown callback.
  int rc = uv_shutdown(&shutdown_req_, stream(), [](uv_shutdown_t*, int) {});
  if (rc == 0) shutting_down_ = true;
  return rc;
}

void TcpTransport::close() {
  if (closing_) return;
  closing_ = true;
  reading_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), &TcpTransport::on_close);
}

void TcpTransport::on_close(uv_handle_t* h) {
  auto* t = static_cast<TcpTransport*>(h->data);
  if (t->user_ != nullptr) t->user_->on_transport_closed();
}

int TcpTransport::splice_fd() const {
  uv_os_fd_t fd;
  if (closing_ || uv_fileno(reinterpret_cast<const uv_handle_t*>(&tcp_), &fd) != 0) return -1;
  return fd;
}

int TcpTransport::tcp_state() const {
  uv_os_fd_t fd;
  if (closing_ || uv_fileno(reinterpret_cast<const uv_handle_t*>(&tcp_), &fd) != 0) return -1;
  tcp_info info{};
  socklen_t len = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
  return info.tcpi_state;
}

bool TcpTransport::peer_closed() const {
  const int state = tcp_state();
  return state == TCP_CLOSE_WAIT || state == TCP_CLOSE || state == TCP_LAST_ACK;
}

bool TcpTransport::peer_reset() const { return tcp_state() == TCP_CLOSE; }

std::string TcpTransport::peer() const {
  // Kept from when the socket was connected: a peer that reset the
  // connection has no address any more, and the line about it needs one.
  if (!peer_.empty()) return peer_;
  return lookup_peer();
}

std::string TcpTransport::lookup_peer() const {
  sockaddr_storage ss{};
  int len = sizeof ss;
  if (uv_tcp_getpeername(&tcp_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    uv_ip4_name(a, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
  uv_ip6_name(a, host, sizeof host);
  return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
}

}  // namespace epochgate::proxy
