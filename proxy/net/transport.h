// proxy/net/transport.h: the byte-stream interface between a Connection (framing,
// pooled buffers, watermarks) and whatever carries its bytes: a plain TCP
// socket today (TcpTransport), TLS over memory BIOs or an in-memory fake for
// tests tomorrow. Owns the contract only; never buffers for the Connection,
// never knows about Kafka frames.
//
// Reads are "pull room, then commit": the transport asks its user for room
// (on_transport_alloc) and reports how much it filled (on_transport_read), so
// a plain socket reads straight into the Connection's pooled buffer and a TLS
// transport decrypts straight into it (SSL_read into the given room).
//
// Handshake: ready() is false while a transport cannot carry application
// bytes yet (a TLS handshake under way). The user does not write then; bytes
// wait in its own queue. The transport drives the handshake itself from the
// moment its user first starts reading or writing, reading the socket
// whatever the user's reading state, and calls on_transport_ready(0) once
// application bytes may flow (or with a uv error when it failed: the
// transport is unusable, the user closes it). A transport that is ready from
// the start (plain TCP, the test fake) never calls on_transport_ready().
#pragma once

#include <uv.h>

#include <cstddef>
#include <string>
#include <sys/types.h>

namespace epochgate::proxy {

/// What a Transport tells its user. All calls come from the loop thread's
/// callbacks, never from inside one of the Transport's own functions, so the
/// user may call the transport from any of them.
class TransportUser {
 public:
  virtual ~TransportUser() = default;
  /// Room for up to buf->len incoming bytes at buf->base. Setting
  /// buf->len = 0 means "no room": the transport then reports UV_ENOBUFS
  /// through on_transport_read() and stops reading.
  virtual void on_transport_alloc(uv_buf_t* buf) = 0;
  /// `n` > 0 bytes were placed at the start of the last room handed out;
  /// `n` < 0 is a uv error (UV_EOF: the peer closed cleanly; UV_ENOBUFS: no
  /// room was given); reading has stopped then, except after a turn the user
  /// took itself (Transport::took_turn()). Called with 0 (nothing came)
  /// only after such a turn that offered room all the same.
  virtual void on_transport_read(ssize_t n) = 0;
  /// The write() started last completed: 0 when every byte reached the
  /// socket, else a uv error (UV_ECANCELED when close() came first).
  virtual void on_transport_written(int status) = 0;
  /// The handshake finished (0) or failed (uv error). Only transports whose
  /// ready() starts false call this, exactly once.
  virtual void on_transport_ready(int status) = 0;
  /// close() finished: no callback follows; the transport may be destroyed.
  virtual void on_transport_closed() = 0;
};

/// One byte stream. The user calls set_user() before anything else and
/// destroys the transport only after on_transport_closed() (a transport that
/// holds a libuv handle must outlive its close callback).
class Transport {
 public:
  virtual ~Transport() = default;

  /// Where callbacks go from now on.
  virtual void set_user(TransportUser& user) = 0;

  /// Starts or stops delivering bytes to the user (on_transport_alloc /
  /// on_transport_read). Returns 0 or a uv error. Idempotent.
  virtual int start_reading() = 0;
  virtual void stop_reading() = 0;

  /// False while a handshake must finish before application bytes flow.
  virtual bool ready() const = 0;

  /// Sends as much of `bufs` (in order) as can go without waiting; never
  /// calls back. Returns the bytes taken (0 < n <= total), UV_EAGAIN when
  /// nothing could go, or another uv error. Not while a write() is in flight.
  virtual ssize_t try_write(const uv_buf_t* bufs, unsigned nbufs) = 0;
  /// Sends all of `bufs` (in order); the bytes must stay valid and unchanged
  /// until on_transport_written(). One write at a time. Returns 0 or a uv
  /// error (then no callback follows).
  virtual int write(const uv_buf_t* bufs, unsigned nbufs) = 0;
  /// True when try_write() hands the caller's bytes to the kernel without
  /// keeping a reference, so the user may send a large frame straight from
  /// the buffer it was read into (Connection::write_through) and copy only
  /// what was not taken. TLS qualifies too: it encrypts before returning.
  /// False for a transport that would keep a reference to the caller's
  /// bytes after the call: the user then copies into its own queue first.
  virtual bool writes_in_place() const = 0;

  /// Half-closes the sending side once the writes in flight are done (TCP
  /// FIN; a TLS close_notify first). Reading goes on. Returns 0 or a uv error.
  virtual int shutdown() = 0;
  /// Closes the stream (idempotent); a write in flight completes with
  /// UV_ECANCELED, then on_transport_closed() follows from the loop.
  virtual void close() = 0;

  /// The socket's descriptor when its bytes are the stream's bytes, so the
  /// user may move them with splice(2) itself (proxy/net/splice_pipe.h):
  /// plain TCP. -1 when bytes are transformed (TLS) or there is no socket.
  /// The user reads it only from on_transport_alloc() (its turn at the
  /// socket: it then gives no room) and writes it only with no write in
  /// flight, so the transport's own reads and writes never interleave.
  virtual int splice_fd() const { return -1; }
  /// Bytes written after the peer's end of stream (UV_EOF) still reach it
  /// when it only shut down its writing side (a TCP half-close).
  virtual bool writes_after_peer_eof() const { return true; }
  /// Called by the user from on_transport_alloc() when it read splice_fd()
  /// itself: the UV_ENOBUFS that follows if it gives no room does not stop
  /// reading, so the socket is offered again while bytes wait (libuv polls
  /// level-triggered); if it gives room, a read that finds nothing is
  /// reported as 0. Transports without splice_fd() never see it.
  virtual void took_turn() {}

  /// Peer address as "host:port" ("[v6]:port"), for logs; "" if unknown.
  virtual std::string peer() const = 0;
  /// True when the peer has closed its side while reads are paused and
  /// unread bytes wait (Linux TCP_INFO for TCP); false when unknown.
  virtual bool peer_closed() const = 0;
  /// True when the peer reset the connection (TCP_CLOSE): unlike its FIN
  /// (which may be a half-close), nothing written reaches it any more.
  virtual bool peer_reset() const { return false; }
};

}  // namespace epochgate::proxy
