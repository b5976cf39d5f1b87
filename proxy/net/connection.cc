// proxy/net/connection.cc
#include "proxy/net/connection.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace epochgate::proxy {

Connection::Connection(std::unique_ptr<Transport> transport, BufferPool& pool,
                       ConnectionOwner& owner)
    : transport_(std::move(transport)), pool_(pool), owner_(&owner) {
  transport_->set_user(*this);
}

Connection::~Connection() {
  if (enforce_budget_ && budget_ != nullptr) budget_->leave();
}

void Connection::start_reading() {
  // After the peer's end of stream a read would only report it again.
  if (reading_ || closing_ || eof_) return;
  if (paced_ && !pace_in_poll_) {
    reading_ = true;  // the pacer starts the reads at its check phase
    return;
  }
  if (transport_->start_reading() == 0) reading_ = true;
}

void Connection::stop_reading() {
  if (!reading_) return;
  if (!paced_ || pace_in_poll_) transport_->stop_reading();
  reading_ = false;
}

void Connection::resume_after_pacing() {
  if (!paced_) return;
  paced_ = false;
  turn_bytes_ = 0;
  if (pace_in_poll_ || !reading_ || closing_) return;
  if (transport_->start_reading() != 0) reading_ = false;
}

void Connection::release_idle_input() {
  pending_frame_ = 0;
  if (frame_buffer_ && in_.empty()) {
    // A frame-sized buffer is handed back (the pool keeps only small large ones).
    pool_.give_back(std::move(in_));
    frame_buffer_ = false;
  }
  if (in_.allocated() && in_.empty()) pool_.give_back(std::move(in_));
  account();
}

void Connection::reserve_input(size_t total, size_t step) {
  pending_frame_ = total;
  pending_step_ = step;
  if (!in_.allocated()) in_ = pool_.take();
  if (in_.capacity() >= total) {
    if (in_.tail_room() < total - in_.size()) in_.reserve_tail(total - in_.size());  // compacts
    return;
  }
  if (over_budget()) return;  // the frame buffer is made once the budget allows
  // Move the partial frame (at most one read's worth) once into a buffer of
  // exactly the frame's size. Its untouched pages cost nothing until bytes
  // arrive; the budget is charged as they do (input_held()).
  ByteBuffer frame = pool_.take_at_least(total);
  frame.append(in_.begin(), in_.size());
  pool_.give_back(std::move(in_));
  in_ = std::move(frame);
  frame_buffer_ = true;
  account();
}

void Connection::on_transport_alloc(uv_buf_t* buf) {
  Connection* c = this;
  if (paced_ && pace_in_poll_) {
    // Yielded for this loop turn: no room, and reading goes on (the socket
    // is offered again at the next poll, which serves the others first).
    transport_->took_turn();
    turn_ = UV_EAGAIN;
    buf->base = nullptr;
    buf->len = 0;
    return;
  }
  if (in_.empty() && transport_->splice_fd() >= 0) {
    // The owner may move the bytes itself (splice); unread input would have
    // to go first, so only with none.
    ssize_t r = owner_->take_read_turn(*this);
    if (r != 0) {
      turn_ = r;
      transport_->took_turn();
      const size_t after = std::exchange(read_after_turn_, 0);
      if (r < 0 || after == 0) {
        buf->base = nullptr;
        buf->len = 0;
        return;
      }
      // The bytes behind the moved ones are read in this same callback:
      // handing libuv no room would send it back to the poll first, one
      // more epoll_wait per run the owner moved.
      reserve_input(after, after);
    }
  }
  if (!c->in_.allocated()) c->in_ = c->pool_.take();
  bool over_budget = c->over_budget();
  // Read at least a pool block at a time; a frame larger than that got its
  // room from reserve_input() when its size prefix arrived. Over the buffer
  // budget nothing grows: with no room left the read reports UV_ENOBUFS and
  // the owner pauses this connection until the budget frees up.
  size_t len;
  if (c->pending_frame_ > c->in_.size()) {
    // A frame in progress: read up to its end into the room reserved for
    // it. Over the budget, a frame buffer takes no more bytes (each one
    // would touch a new page); room still missing after a budget pause is
    // made here.
    if (c->in_.tail_room() == 0 && !over_budget) c->reserve_input(c->pending_frame_, c->pending_step_);
    len = (over_budget && c->frame_buffer_)
              ? 0
              : std::min(c->in_.tail_room(), c->pending_frame_ - c->in_.size());
  } else {
    if (!over_budget && c->in_.tail_room() < c->pool_.block_size() / 4)
      c->in_.reserve_tail(c->pool_.block_size());
    len = c->in_.tail_room();
    if (c->pending_frame_ == 0 && c->first_read_bytes_ != 0)
      len = std::min(len, c->first_read_bytes_);
  }
  len = std::min(len, kMaxReadBytes);
  if (len == 0) {
    buf->base = nullptr;
    buf->len = 0;
    return;
  }
  buf->base = reinterpret_cast<char*>(c->in_.tail());
  buf->len = len;
  c->account();
}

void Connection::count_read(size_t n, bool spliced) {
  bytes_read_ += n;
  turn_bytes_ += spliced ? ReadPacer::spliced_weight(n) : n;
  if (pacer_ != nullptr && turn_bytes_ >= ReadPacer::kBytesPerTurn && reading_ && !closing_ &&
      !paced_) {
    // Enough for this turn: a socket transport would keep reading this
    // socket (libuv: up to 32 reads) before serving anyone else on the loop.
    // A transport that lets the owner take turns keeps its poll
    // registration and gets no room until the check phase: stopping and
    // starting the read would cost two epoll_ctl calls (libuv 1.44 re-adds
    // the descriptor, EEXIST, then modifies it) per turn's worth of bytes.
    pace_in_poll_ = transport_->splice_fd() >= 0;
    if (!pace_in_poll_) transport_->stop_reading();
    paced_ = true;
    pacer_->defer(*this);
  }
}

void Connection::on_transport_read(ssize_t nread) {
  Connection* c = this;
  if (turn_ != 0) {
    // The owner took this turn at the socket (take_read_turn()); reading goes on.
    const ssize_t r = std::exchange(turn_, 0);
    if (r < 0) {
      // Taken with no room offered (nread is UV_ENOBUFS).
      if (r == UV_EAGAIN) return;
      nread = r;  // the socket's end or error, as from a read
    } else {
      count_read(static_cast<size_t>(r), /*spliced=*/true);
      if (nread <= 0) {
        // No room was offered (UV_ENOBUFS), or the read after the turn found
        // nothing (0) or the socket's end or error: the moved bytes first.
        owner_->on_readable(*this);
        if (nread == 0 || nread == UV_ENOBUFS || closing_) return;
      }
      // nread > 0: the moved bytes and the ones read after them, reported once.
    }
  }
  if (nread > 0) {
    c->in_.commit(static_cast<size_t>(nread));
    c->count_read(static_cast<size_t>(nread), /*spliced=*/false);
    c->owner_->on_readable(*c);
    return;
  }
  if (nread < 0) {
    if (nread == UV_EOF) c->eof_ = true;
    c->stop_reading();
    c->owner_->on_read_error(*c, static_cast<int>(nread));
  }
}

void Connection::on_transport_ready(int status) {
  if (closing_) return;
  if (status != 0) {
    stop_reading();
    owner_->on_read_error(*this, status);
    return;
  }
  flush();  // what was queued during the handshake
}

void Connection::queue(const void* data, size_t n) {
  if (closing_ || n == 0) return;
  bytes_accepted_ += n;
  append_out(data, n);
  if (queued_bytes() > high_) was_above_high_ = true;
  account();
}

void Connection::append_out(const void* data, size_t n) {
  if (!out_open_ || out_.back().tail_room() < n) {
    // A large remainder gets a buffer of its own size, never a kept
    // multi-MiB one that would charge the budget far more than it holds.
    out_.push_back(n <= pool_.block_size() ? pool_.take() : ByteBuffer(n));
    out_open_ = true;
    out_capacity_ += out_.back().capacity();
  }
  out_.back().append(data, n);  // fits: never grows
  out_bytes_ += n;
}

void Connection::consume_out(size_t n) {
  while (n > 0 && !out_.empty()) {
    ByteBuffer& head = out_.front();
    size_t take = std::min(n, head.size());
    head.consume(take);
    out_bytes_ -= take;
    n -= take;
    if (!head.empty()) break;
    out_capacity_ -= head.capacity();
    pool_.give_back(std::move(head));
    out_.pop_front();
  }
  if (out_.empty()) out_open_ = false;
}

void Connection::give_back_all(std::deque<ByteBuffer>& bufs) {
  for (ByteBuffer& b : bufs) pool_.give_back(std::move(b));
  bufs.clear();
}

void Connection::write_owned(ByteBuffer&& buf) {
  if (closing_ || buf.empty()) {
    pool_.give_back(std::move(buf));
    return;
  }
  bytes_accepted_ += buf.size();
  if (!write_in_flight_ && transport_->ready() && transport_->writes_in_place()) {
    // Socket full (or an error, which the next flush() reports): the rest
    // waits in the buffer itself.
    ssize_t rc = try_write(buf.begin(), buf.size());
    if (rc > 0) buf.consume(static_cast<size_t>(rc));
    if (buf.empty()) {
      pool_.give_back(std::move(buf));
      if (queued_bytes() <= low_) was_above_high_ = false;
      account();
      return;
    }
  }
  out_bytes_ += buf.size();
  out_capacity_ += buf.capacity();
  out_.push_back(std::move(buf));
  out_open_ = false;  // later small frames go to a new block behind it
  if (queued_bytes() > high_) was_above_high_ = true;
  account();
}

void Connection::write_through(const uint8_t* data, size_t n) {
  if (closing_ || n == 0) return;
  // Small frames are copied and coalesced into one write at flush(); so is
  // everything while the socket is full already (a write in flight), during
  // a handshake, and on a transport that transforms what it sends.
  if (n < kWriteThroughBytes || write_in_flight_ || !transport_->ready() ||
      !transport_->writes_in_place()) {
    queue(data, n);
    return;
  }
  // Socket full (or an error, which the flush() after this reports): what
  // it did not take waits in the queue like any other bytes.
  ssize_t rc = try_write(data, n);
  size_t written = rc > 0 ? static_cast<size_t>(rc) : 0;
  bytes_accepted_ += written;
  if (written < n)
    queue(data + written, n - written);
  else
    release_output_if_empty();
  // Everything went out. Nobody waits for on_drained() here: reading pauses
  // only while a write is in flight, and then this path queues instead.
  if (queued_bytes() <= low_) was_above_high_ = false;
}

ByteBuffer Connection::take_input() {
  ByteBuffer b = std::move(in_);
  frame_buffer_ = false;
  pending_frame_ = 0;
  account();
  return b;
}

void Connection::flush() {
  if (closing_ || write_in_flight_ || out_.empty() || !transport_->ready()) return;
  // Try the write right away: most small batches go out without a callback.
  ssize_t rc = try_write(nullptr, 0);
  if (rc < 0 && rc != UV_EAGAIN) {
    owner_->on_write_error(*this, static_cast<int>(rc));
    return;
  }
  if (release_output_if_empty()) {
    if (was_above_high_ && queued_bytes() <= low_) {
      was_above_high_ = false;
      owner_->on_drained(*this);
    }
    return;
  }
  start_write();
}

ssize_t Connection::try_write(const uint8_t* extra, size_t extra_len) {
  uv_buf_t bufs[kMaxWriteBufs + 1];
  unsigned count = 0;
  for (ByteBuffer& b : out_) {
    if (count == kMaxWriteBufs) break;
    bufs[count++] = uv_buf_init(reinterpret_cast<char*>(b.mutable_begin()),
                                static_cast<unsigned>(b.size()));
  }
  // `extra` goes only right behind the whole queue (else it is queued by the caller).
  if (extra_len > 0 && count == out_.size())
    bufs[count++] = uv_buf_init(reinterpret_cast<char*>(const_cast<uint8_t*>(extra)),
                                static_cast<unsigned>(extra_len));
  if (count == 0) return 0;
  ssize_t rc = transport_->try_write(bufs, count);
  if (rc < 0) return rc;
  size_t written = static_cast<size_t>(rc);
  bytes_written_ += written;
  size_t from_queue = std::min(written, out_bytes_);
  consume_out(from_queue);
  return static_cast<ssize_t>(written - from_queue);
}

void Connection::start_write() {
  uv_buf_t bufs[kMaxWriteBufs];
  unsigned count = 0;
  while (!out_.empty() && count < kMaxWriteBufs) {
    ByteBuffer& b = out_.front();
    bufs[count++] = uv_buf_init(reinterpret_cast<char*>(b.mutable_begin()),
                                static_cast<unsigned>(b.size()));
    writing_bytes_ += b.size();
    writing_capacity_ += b.capacity();
    out_bytes_ -= b.size();
    out_capacity_ -= b.capacity();
    writing_.push_back(std::move(b));  // the storage does not move
    out_.pop_front();
  }
  if (out_.empty()) out_open_ = false;
  int rc = transport_->write(bufs, count);
  if (rc != 0) {
    // Back to the head of the chain, in order; the next block is not reopened.
    while (!writing_.empty()) {
      out_bytes_ += writing_.back().size();
      out_capacity_ += writing_.back().capacity();
      out_.push_front(std::move(writing_.back()));
      writing_.pop_back();
    }
    writing_bytes_ = writing_capacity_ = 0;
    owner_->on_write_error(*this, rc);
    return;
  }
  write_in_flight_ = true;
}

void Connection::on_transport_written(int status) {
  Connection* c = this;
  c->write_in_flight_ = false;
  if (status == 0) c->bytes_written_ += c->writing_bytes_;
  c->give_back_all(c->writing_);
  c->writing_bytes_ = c->writing_capacity_ = 0;
  c->account();
  if (status != 0) {
    if (status != UV_ECANCELED) c->owner_->on_write_error(*c, status);
    return;
  }
  if (!c->out_.empty()) c->start_write();
  bool drained = c->was_above_high_ && c->queued_bytes() <= c->low_;
  bool written = c->notify_written_ && c->queued_bytes() == 0;
  if (drained) c->was_above_high_ = false;
  if (written) c->notify_written_ = false;
  if (drained || written) c->owner_->on_drained(*c);
}

void Connection::close() {
  if (closing_) return;
  closing_ = true;
  reading_ = false;
  if (paced_ && pacer_ != nullptr) pacer_->forget(*this);
  paced_ = false;
  transport_->close();
}

void Connection::on_transport_closed() {
  pool_.give_back(std::move(in_));
  give_back_all(out_);
  give_back_all(writing_);
  out_open_ = false;
  out_bytes_ = out_capacity_ = writing_bytes_ = writing_capacity_ = 0;
  account();
  owner_->on_closed(*this);
}

}  // namespace epochgate::proxy
