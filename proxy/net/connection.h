// proxy/net/connection.h: one byte stream (client or upstream side) over a
// Transport (proxy/net/transport.h; plain TCP today): reads into a pooled input
// buffer, keeps outgoing bytes as an ordered chain of buffers (small frames
// coalesced into pool blocks, large ones in the buffer they were read into)
// and sends them with one gathered write (try_write first), counts queued
// bytes for backpressure, holds output while the transport's handshake
// runs. Knows nothing about Kafka (the owner splits frames out of input()) and
// nothing about sockets (the transport does every system call).
#pragma once

#include <uv.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "proxy/net/buffer_budget.h"
#include "proxy/net/buffer_pool.h"
#include "proxy/net/byte_buffer.h"
#include "proxy/net/read_pacer.h"
#include "proxy/net/transport.h"

namespace epochgate::proxy {

class Connection;

/// What a Connection tells its owner. All calls happen on the loop thread.
class ConnectionOwner {
 public:
  virtual ~ConnectionOwner() = default;
  /// New bytes are in c.input(). The owner consumes whole frames.
  virtual void on_readable(Connection& c) = 0;
  /// The peer closed or the socket failed (uv error code, UV_EOF for a clean
  /// close), or UV_ENOBUFS: the buffer budget left no room, reading stopped.
  /// Also a failed transport handshake (its uv error): the connection is unusable.
  virtual void on_read_error(Connection& c, int status) = 0;
  /// Queued output fell to or below the low watermark after being above the high one.
  virtual void on_drained(Connection& c) = 0;
  /// A write failed: the connection is unusable.
  virtual void on_write_error(Connection& c, int status) = 0;
  /// The transport closed: its handle is released; the owner may free the Connection.
  virtual void on_closed(Connection& c) = 0;
  /// The socket is readable, c.input() holds no unread byte and the transport
  /// offers its descriptor (Transport::splice_fd()): the owner may read the
  /// socket itself (splice) instead of getting room. Returns 0 (not taken:
  /// room is offered as usual), the bytes it moved off the socket (then
  /// on_readable() follows with nothing new in c.input()), UV_EAGAIN (taken,
  /// nothing was there) or a uv error (UV_EOF...; on_read_error() follows).
  /// After moving bytes it may ask for a read in the same turn
  /// (Connection::read_after_turn()).
  /// Called from inside libuv's read: it must not stop reading or close
  /// anything, only move bytes and note what to do in the callback after.
  virtual ssize_t take_read_turn(Connection& c) {
    (void)c;
    return 0;
  }
};

/// A byte stream with pooled input and coalesced output buffers.
class Connection : private TransportUser {
 public:
  /// Takes `transport` (not yet reading); its callbacks come here from now on.
  Connection(std::unique_ptr<Transport> transport, BufferPool& pool, ConnectionOwner& owner);
  ~Connection() override;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Hands the connection to a new owner (a dialer passing on a connected
  /// socket); later callbacks go to `owner`.
  void set_owner(ConnectionOwner& owner) { owner_ = &owner; }

  Transport& transport() { return *transport_; }
  const Transport& transport() const { return *transport_; }

  /// Starts or stops delivering bytes (Transport::start_reading /
  /// stop_reading); idempotent. Starting also starts a transport's handshake.
  /// reading() stays true while the pacer holds the reads for one loop turn.
  /// Once a read reported the peer's end of stream (UV_EOF), starting is a
  /// no-op: the peer sends nothing more, and a read would report it again.
  void start_reading();
  void stop_reading();
  bool reading() const { return reading_; }
  /// A read reported the peer's end of stream (it may still read: a half-close).
  bool read_eof() const { return eof_; }
  /// From now on, after a turn's worth of bytes (ReadPacer) this connection
  /// yields the loop to the others for a turn (null: never yields).
  void set_pacer(ReadPacer* pacer) { pacer_ = pacer; }
  /// Called by the pacer in the check phase: reads resume if still wanted.
  void resume_after_pacing();
  /// Largest single read (bytes): a read copies and faults in at most this
  /// much, whatever the room reserved for a large frame.
  static constexpr size_t kMaxReadBytes = 256 * 1024;

  /// Unread input bytes. The owner calls input().consume(n) for each frame and
  /// release_idle_input() when done, so empty buffers go back to the pool.
  ByteBuffer& input() { return in_; }
  const ByteBuffer& input() const { return in_; }
  void release_idle_input();
  /// A frame of `total` bytes (prefix included) is in progress at the head of
  /// the input. A frame larger than the buffer gets one buffer of exactly its
  /// size (its pages are touched only as bytes arrive), so it is read into
  /// place once and never copied to a bigger buffer; the buffer budget is
  /// charged what has arrived plus `step` bytes, and while the budget is
  /// exceeded nothing more is read into it. Reads stop at the frame's end.
  void reserve_input(size_t total, size_t step);
  /// No frame is in progress: reads take whatever the buffer holds.
  void clear_pending_frame() { pending_frame_ = 0; }
  /// While no frame is in progress, a read takes at most `bytes` (0: the
  /// buffer's room, a pool block): the owner expects a frame whose bulk it
  /// would rather splice than copy, and needs only its first fields read.
  void set_first_read_bytes(size_t bytes) { first_read_bytes_ = bytes; }
  /// A read meant for a frame's fields where its record bytes may be
  /// spliced (the next head after a streamed request, a response's fields
  /// between Records runs), in bytes: fields take about 60-300 bytes, so
  /// one read holds them with room to spare, and what it copies beyond them
  /// is record bytes a splice could have moved.
  static constexpr size_t kFieldsReadBytes = 1024;

  /// Queues bytes for writing (copied). Call flush() once per batch.
  void queue(const void* data, size_t n);
  /// Sends `n` bytes the caller owns only until this returns, behind
  /// whatever is queued. From kWriteThroughBytes up, with no write in flight
  /// and a ready transport that writes in place (plain TCP): one try_write
  /// of the queued bytes and these (writev), so a
  /// large frame goes from the buffer it was read into straight to the
  /// socket and only what the socket did not take is copied into the queue.
  /// Smaller ones are queued (copied, coalesced at flush()). Order with
  /// queue() is kept. Write errors surface from the next flush(), never here.
  void write_through(const uint8_t* data, size_t n);
  /// Sends every unread byte of `buf`, behind whatever is queued, without
  /// copying them: the buffer itself joins the output chain (one try_write
  /// first when no write is in flight) and goes back to the pool once
  /// written. For a frame read into a buffer of its own (take_input()),
  /// which the caller will not touch again. Order with queue() and
  /// write_through() is kept; the buffer counts in queued_bytes() and
  /// held_bytes() until written. Write errors surface from the next flush().
  void write_owned(ByteBuffer&& buf);
  /// Hands over the input buffer with its unread bytes (a whole frame read
  /// into a buffer of its own size) and forgets any pending frame.
  ByteBuffer take_input();
  /// Frames (prefix included) at least this large skip the output copy.
  static constexpr size_t kWriteThroughBytes = 16 * 1024;
  /// The next time the output queue empties after a write callback, call
  /// on_drained() even if the high watermark was never passed (once).
  void notify_when_written() { notify_written_ = true; }
  /// Starts writing what is queued if no write is in flight; while the
  /// transport's handshake runs, bytes wait until it is ready.
  void flush();
  /// Bytes handed to queue() and write_through() so far
  /// (for byte counters: written-through bytes never show in queued_bytes()).
  uint64_t bytes_accepted() const { return bytes_accepted_; }
  /// Bytes queued or being written.
  size_t queued_bytes() const { return out_bytes_ + writing_bytes_; }
  /// Watermarks in bytes for on_drained(); high is checked by the owner.
  void set_watermarks(size_t low, size_t high) { low_ = low; high_ = high; }
  bool above_high_watermark() const { return queued_bytes() > high_; }

  /// True when the peer has closed its side (FIN received), even while reads
  /// are paused and unread bytes wait in the socket (Transport::peer_closed).
  bool peer_closed() const { return !closing_ && transport_->peer_closed(); }
  /// The peer reset the connection (Transport::peer_reset).
  bool peer_reset() const { return !closing_ && transport_->peer_reset(); }

  /// Closes the transport (idempotent). on_closed() follows from the loop.
  void close();
  bool closing() const { return closing_; }

  /// Peer address as "host:port", for logs ("" if unknown).
  std::string peer() const { return transport_->peer(); }
  /// Reports this connection's buffer memory to `budget` from now on; with
  /// `enforce`, reading also stops growing buffers while the budget is exceeded
  /// (client side: new requests wait; upstream responses always flow, since
  /// they are what frees memory).
  void set_budget(BufferBudget* budget, bool enforce) {
    if (enforce_budget_ && budget_ != nullptr) budget_->leave();
    budget_ = budget;
    enforce_budget_ = enforce;
    if (enforce_budget_ && budget_ != nullptr) budget_->join();
  }
  /// Enforcing the buffer budget, and this connection holds at least its
  /// fair share of it while it is exceeded: reading must wait.
  bool over_budget() const {
    return enforce_budget_ && budget_ != nullptr && budget_->exceeded_for(held_bytes());
  }
  /// Buffer bytes this connection holds (input and output storage).
  size_t held_bytes() const { return input_held() + out_capacity_ + writing_capacity_; }
  /// Most buffers handed to one write (a gathered write of the chain).
  static constexpr unsigned kMaxWriteBufs = 64;

  /// The socket's descriptor for splice(2) (Transport::splice_fd()), -1 if none.
  int splice_fd() const { return closing_ ? -1 : transport_->splice_fd(); }
  /// Nothing is queued or being written and the transport is ready: bytes
  /// written to splice_fd() now go out in order.
  bool output_idle() const {
    return !closing_ && queued_bytes() == 0 && !write_in_flight_ && transport_->ready();
  }
  /// No write is in flight, the transport is ready and at most `max` bytes
  /// are queued (in this loop turn, since nothing is being written): the
  /// next flush() tries them, and whatever is queued behind them, in one write.
  bool output_unsent(size_t max) const {
    return !closing_ && !write_in_flight_ && transport_->ready() && queued_bytes() <= max;
  }
  /// `n` bytes were written to splice_fd() by the owner (output_idle()):
  /// counted as accepted and written.
  void count_spliced_out(size_t n) {
    bytes_accepted_ += n;
    bytes_written_ += n;
  }
  /// Called by the owner from inside take_read_turn() when it moved bytes
  /// and stopped where the socket may hold more that it wants read into
  /// input() now (a spliced run ended before the socket emptied): the same
  /// callback then offers room for up to `bytes` (reserve_input(bytes, bytes)
  /// on the empty input), so reading them costs no return to the poll.
  /// on_readable() then reports both at once.
  void read_after_turn(size_t bytes) { read_after_turn_ = bytes; }

  /// Total bytes read and written on this connection.
  uint64_t bytes_read() const { return bytes_read_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  // TransportUser
  void on_transport_alloc(uv_buf_t* buf) override;
  void on_transport_read(ssize_t nread) override;
  void on_transport_written(int status) override;
  void on_transport_ready(int status) override;
  void on_transport_closed() override;
  /// Counts `n` bytes read (`spliced`: moved by the owner's splice, which
  /// weigh less in a turn) and yields to the pacer after a turn's worth.
  void count_read(size_t n, bool spliced);
  void start_write();
  /// One try_write of the queued bytes followed by `extra` (may be empty):
  /// consumes what left the queue and returns how many bytes of `extra` went
  /// out, or a negative uv error (UV_EAGAIN: the socket took nothing).
  ssize_t try_write(const uint8_t* extra, size_t extra_len);
  /// Reports the output's storage to the budget; true when no output bytes
  /// wait (written buffers went back to the pool as they emptied).
  bool release_output_if_empty() {
    account();
    return out_.empty();
  }
  /// Copies `n` bytes to the chain's open pool block (a new block when it
  /// lacks room: blocks are never grown, so queued bytes are never copied again).
  void append_out(const void* data, size_t n);
  /// Drops `n` written bytes from the chain's head, returning emptied buffers.
  void consume_out(size_t n);
  void give_back_all(std::deque<ByteBuffer>& bufs);
  /// Of a frame-sized input buffer, the bytes arrived plus one step.
  size_t input_held() const {
    return frame_buffer_ ? std::min(in_.capacity(), in_.size() + pending_step_) : in_.capacity();
  }
  /// Reports the change in held_bytes() since the last report.
  void account() {
    if (budget_ == nullptr) return;
    int64_t now = static_cast<int64_t>(held_bytes());
    budget_->add(now - reported_);
    reported_ = now;
  }

  std::unique_ptr<Transport> transport_;
  BufferPool& pool_;
  ConnectionOwner* owner_;
  ByteBuffer in_;
  std::deque<ByteBuffer> out_;      // waiting, in order; appended to while a write is in flight
  bool out_open_ = false;           // out_.back() is a pool block append_out() may fill
  std::deque<ByteBuffer> writing_;  // owned by the in-flight Transport::write
  size_t out_bytes_ = 0;            // unread bytes in out_
  size_t out_capacity_ = 0;         // storage of out_
  size_t writing_bytes_ = 0;
  size_t writing_capacity_ = 0;
  uint64_t bytes_accepted_ = 0;
  bool write_in_flight_ = false;
  bool reading_ = false;
  bool paced_ = false;         // reads held by the pacer until its check phase
  bool pace_in_poll_ = false;  // held by handing out no room, the transport still reading
  bool frame_buffer_ = false;  // in_ was sized for the pending frame
  ReadPacer* pacer_ = nullptr;
  size_t turn_bytes_ = 0;      // copied bytes (and weighted spliced ones) since the last yield
  bool closing_ = false;
  bool eof_ = false;  // a read reported UV_EOF
  bool was_above_high_ = false;
  bool notify_written_ = false;
  ssize_t turn_ = 0;  // take_read_turn()'s result, reported by the read callback after it
  size_t read_after_turn_ = 0;  // read_after_turn(), for the alloc callback that took the turn
  size_t first_read_bytes_ = 0;  // set_first_read_bytes(); 0: no cap
  size_t low_ = 1 << 20;
  size_t high_ = 4 << 20;
  size_t pending_frame_ = 0;  // total bytes of the frame being read, 0 if none
  size_t pending_step_ = 0;   // its growth step
  BufferBudget* budget_ = nullptr;
  bool enforce_budget_ = false;
  int64_t reported_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t bytes_written_ = 0;
};

}  // namespace epochgate::proxy
