// proxy/connection.cc
#include "proxy/connection.h"

#include <algorithm>
#include <cstring>

namespace epochgate::proxy {

Connection::Connection(std::unique_ptr<Transport> transport, BufferPool& pool,
                       ConnectionOwner& owner)
    : transport_(std::move(transport)), pool_(pool), owner_(&owner) {
  transport_->set_user(*this);
}

Connection::~Connection() = default;

void Connection::start_reading() {
  if (reading_ || closing_) return;
  if (paced_) {
    reading_ = true;  // the pacer starts the reads at its check phase
    return;
  }
  if (transport_->start_reading() == 0) reading_ = true;
}

void Connection::stop_reading() {
  if (!reading_) return;
  if (!paced_) transport_->stop_reading();
  reading_ = false;
}

void Connection::resume_after_pacing() {
  if (!paced_) return;
  paced_ = false;
  turn_bytes_ = 0;
  if (!reading_ || closing_) return;
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

void Connection::on_transport_read(ssize_t nread) {
  Connection* c = this;
  if (nread > 0) {
    c->in_.commit(static_cast<size_t>(nread));
    c->bytes_read_ += static_cast<uint64_t>(nread);
    c->turn_bytes_ += static_cast<size_t>(nread);
    if (c->pacer_ != nullptr && c->turn_bytes_ >= ReadPacer::kBytesPerTurn && c->reading_ &&
        !c->closing_) {
      // Enough for this turn: a socket transport would keep reading this
      // socket (libuv: up to 32 reads) before serving anyone else on the loop.
      c->transport_->stop_reading();
      c->paced_ = true;
      c->pacer_->defer(*c);
    }
    c->owner_->on_readable(*c);
    return;
  }
  if (nread < 0) {
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
  if (!out_.allocated()) out_ = pool_.take();
  out_.append(data, n);
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

void Connection::write_buffer(ByteBuffer&& buf) {
  if (closing_ || buf.empty()) return;
  if (!can_write_buffer()) {  // callers check; keep the order all the same
    write_through(buf.begin(), buf.size());
    pool_.give_back(std::move(buf));
    return;
  }
  bytes_accepted_ += buf.size();
  uv_buf_t b = uv_buf_init(reinterpret_cast<char*>(buf.mutable_begin()),
                           static_cast<unsigned>(buf.size()));
  ssize_t rc = transport_->try_write(&b, 1);
  if (rc > 0) {
    bytes_written_ += static_cast<uint64_t>(rc);
    buf.consume(static_cast<size_t>(rc));
  }
  if (buf.empty()) {
    pool_.give_back(std::move(buf));
    return;
  }
  // The rest is written from the buffer itself, as start_write() does with
  // the queue; on_transport_written() releases it.
  pool_.give_back(std::move(writing_));
  writing_ = std::move(buf);
  b = uv_buf_init(reinterpret_cast<char*>(writing_.mutable_begin()),
                  static_cast<unsigned>(writing_.size()));
  if (int w = transport_->write(&b, 1); w != 0) {
    pool_.give_back(std::move(writing_));
    account();
    owner_->on_write_error(*this, w);
    return;
  }
  write_in_flight_ = true;
  if (queued_bytes() > high_) was_above_high_ = true;
  account();
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
  uv_buf_t bufs[2];
  unsigned count = 0;
  if (!out_.empty())
    bufs[count++] = uv_buf_init(reinterpret_cast<char*>(out_.mutable_begin()),
                                static_cast<unsigned>(out_.size()));
  if (extra_len > 0)
    bufs[count++] = uv_buf_init(reinterpret_cast<char*>(const_cast<uint8_t*>(extra)),
                                static_cast<unsigned>(extra_len));
  ssize_t rc = transport_->try_write(bufs, count);
  if (rc < 0) return rc;
  size_t written = static_cast<size_t>(rc);
  bytes_written_ += written;
  size_t from_queue = std::min(written, out_.size());
  out_.consume(from_queue);
  return static_cast<ssize_t>(written - from_queue);
}

bool Connection::release_output_if_empty() {
  if (!out_.empty()) return false;
  if (out_.allocated()) {
    pool_.give_back(std::move(out_));
    account();
  }
  return true;
}

void Connection::start_write() {
  std::swap(out_, writing_);
  uv_buf_t b = uv_buf_init(reinterpret_cast<char*>(writing_.mutable_begin()),
                           static_cast<unsigned>(writing_.size()));
  int rc = transport_->write(&b, 1);
  if (rc != 0) {
    std::swap(out_, writing_);
    owner_->on_write_error(*this, rc);
    return;
  }
  write_in_flight_ = true;
}

void Connection::on_transport_written(int status) {
  Connection* c = this;
  c->write_in_flight_ = false;
  if (status == 0) c->bytes_written_ += c->writing_.size();
  c->pool_.give_back(std::move(c->writing_));
  c->account();
  if (status != 0) {
    if (status != UV_ECANCELED) c->owner_->on_write_error(*c, status);
    return;
  }
  if (!c->out_.empty()) {
    c->start_write();
  } else if (c->out_.allocated()) {
    c->pool_.give_back(std::move(c->out_));
    c->account();
  }
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
  pool_.give_back(std::move(out_));
  pool_.give_back(std::move(writing_));
  account();
  owner_->on_closed(*this);
}

}  // namespace epochgate::proxy
