// proxy/net/splice_pipe.cc
#include "proxy/net/splice_pipe.h"

#include <fcntl.h>
#include <uv.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace epochgate::proxy {

namespace {
constexpr uint64_t kRetryNs = 1'000'000'000;  // after a failed pipe2()
constexpr unsigned kFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
}  // namespace

SplicePipe::~SplicePipe() { reset(); }

SplicePipe::SplicePipe(SplicePipe&& o) noexcept { *this = std::move(o); }

SplicePipe& SplicePipe::operator=(SplicePipe&& o) noexcept {
  if (this == &o) return *this;
  reset();
  read_fd_ = std::exchange(o.read_fd_, -1);
  write_fd_ = std::exchange(o.write_fd_, -1);
  capacity_ = std::exchange(o.capacity_, 0);
  failed_at_ns_ = std::exchange(o.failed_at_ns_, 0);
  drain_buf_ = std::move(o.drain_buf_);
  return *this;
}

bool SplicePipe::ready(uint64_t now_ns) {
  if (read_fd_ >= 0) return true;
  if (failed_at_ns_ != 0 && now_ns - failed_at_ns_ < kRetryNs) return false;
  int fds[2];
  if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
    failed_at_ns_ = now_ns == 0 ? 1 : now_ns;
    return false;
  }
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  // The default (16 pages) would cost a splice pair per 64 KiB; a larger one
  // may be refused (pipe-user-pages-soft): then the default is used.
  int got = ::fcntl(write_fd_, F_SETPIPE_SZ, static_cast<int>(kWantedCapacity));
  if (got < 0) got = ::fcntl(write_fd_, F_GETPIPE_SZ);
  capacity_ = got > 0 ? static_cast<size_t>(got) : 4096;
  return true;
}

SpliceStep SplicePipe::move(int from, int to, size_t n, const Spill& spill) {
  SpliceStep step;
  if (n > capacity_) n = capacity_;
  // In: a socket hands over what has arrived, possibly in several parts.
  while (step.in < n) {
    ssize_t got = ::splice(from, nullptr, write_fd_, nullptr, n - step.in, kFlags);
    if (got > 0) {
      step.in += static_cast<size_t>(got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    // EAGAIN: nothing more for now. End of stream or an error matter only
    // when nothing came: bytes that came go out first, and the next read
    // sees the same end or error again.
    if (step.in == 0) {
      if (got == 0)
        step.source_error = UV_EOF;
      else if (errno != EAGAIN)
        step.source_error = -errno;
    }
    break;
  }
  // Out: as much as the destination's socket buffer takes.
  while (step.out < step.in && step.sink_error == 0) {
    ssize_t put = ::splice(read_fd_, nullptr, to, nullptr, step.in - step.out, kFlags);
    if (put > 0) {
      step.out += static_cast<size_t>(put);
    } else if (put < 0 && errno == EINTR) {
      continue;
    } else {
      if (put < 0 && errno != EAGAIN) step.sink_error = -errno;
      break;
    }
  }
  if (step.out < step.in && !drain(step.in - step.out, spill)) {
    // Bytes stuck in the pipe would reach the next move's destination:
    // drop the pipe (a new one is made) and fail this destination instead.
    reset();
    step.sink_error = UV_EIO;
  }
  return step;
}

SpliceRun SplicePipe::run(int from, int to, const std::function<uint64_t()>& left,
                          size_t min_bytes, size_t max_bytes, const Spill& spill,
                          const std::function<void(const SpliceStep&)>& on_step) {
  SpliceRun r;
  while (r.moved < max_bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(left(), capacity_));
    SpliceStep step = move(from, to, want, spill);
    on_step(step);
    r.moved += step.in;
    r.source_error = step.source_error;
    r.sink_error = step.sink_error;
    // A source's end or error matters once the bytes before it went out:
    // the next turn sees the same again.
    if (step.sink_error != 0 || step.source_error != 0) break;
    if (step.in < want || step.out < step.in) break;
    if (left() < min_bytes) {
      r.run_ended = true;
      break;
    }
  }
  return r;
}

void SplicePipe::reset() {
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
  read_fd_ = write_fd_ = -1;
  capacity_ = 0;
}

bool SplicePipe::drain(size_t n, const Spill& spill) {
  // One read per kDrainBytes, not per 16 KiB on the stack: a spill of a
  // 1 MiB move took 64 reads.
  if (!drain_buf_) drain_buf_ = std::make_unique<uint8_t[]>(kDrainBytes);
  uint8_t* chunk = drain_buf_.get();
  while (n > 0) {
    ssize_t got = ::read(read_fd_, chunk, std::min(n, kDrainBytes));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // not reached: the pipe holds exactly n bytes
    spill(chunk, static_cast<size_t>(got));
    n -= static_cast<size_t>(got);
  }
  return true;
}

}  // namespace epochgate::proxy
