// proxy/net/splice_pipe.h: moves bytes from one socket to another through a
// kernel pipe with splice(2), so they never enter user space. One pipe per
// event loop, made on first use; it holds bytes only inside one call of
// move(): whatever the destination did not take is read back out into the
// caller's hands before move() returns, so the pipe is empty between calls
// and one pipe serves every connection of the loop. Owns the pipe's two
// descriptors; never owns or closes a socket; knows nothing about Kafka.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace epochgate::proxy {

/// What one SplicePipe::move() did.
struct SpliceStep {
  size_t in = 0;   ///< bytes taken from the source socket
  size_t out = 0;  ///< of those, bytes the destination socket took (the rest were spilled)
  /// 0, UV_EOF (the source was at end of stream before any byte came) or a
  /// uv error of the source (nothing more should be read from it).
  int source_error = 0;
  /// 0 or a uv error of the destination (its connection is unusable); the
  /// bytes it did not take were spilled all the same.
  int sink_error = 0;
};

/// What SplicePipe::run() did over one read turn.
struct SpliceRun {
  size_t moved = 0;      ///< bytes taken from the source socket (spilled ones included)
  int source_error = 0;  ///< as SpliceStep's, of the last move
  int sink_error = 0;    ///< as SpliceStep's; the run stopped there
  /// Stopped because fewer than `min_bytes` were left while both sockets
  /// kept up: the source may hold the bytes behind the run.
  bool run_ended = false;
};

/// A non-blocking, close-on-exec pipe sized for one move (F_SETPIPE_SZ).
class SplicePipe {
 public:
  /// Capacity asked for, in bytes: a copied pacer turn's worth
  /// (ReadPacer::kBytesPerTurn), so 1 MiB takes one splice in and one out
  /// where 256 KiB took four of each; /proc/sys/fs/pipe-max-size is 1 MiB by
  /// default and the kernel may give less. What the client's socket does not
  /// take is queued to it, so one move queues at most this much.
  static constexpr size_t kWantedCapacity = 1024 * 1024;

  SplicePipe() = default;
  ~SplicePipe();
  SplicePipe(const SplicePipe&) = delete;
  SplicePipe& operator=(const SplicePipe&) = delete;
  /// Moving hands over the descriptors (a worker's context is built, then moved).
  SplicePipe(SplicePipe&& o) noexcept;
  SplicePipe& operator=(SplicePipe&& o) noexcept;

  /// Makes the pipe if it is not made yet. False when pipe2() failed (no
  /// descriptors: EMFILE/ENFILE); it is tried again at the next call, at most
  /// once a second, so a descriptor shortage costs no system call per read.
  bool ready(uint64_t now_ns);
  /// The pipe's capacity in bytes (0 before ready()).
  size_t capacity() const { return capacity_; }

  /// Receives bytes read back out of the pipe, in order: what was spliced in
  /// but not out (the destination's socket buffer was full).
  using Spill = std::function<void(const uint8_t* data, size_t n)>;

  /// Moves up to `n` bytes (at most capacity()) from socket `from` to socket
  /// `to`: splice in (non-blocking, so fewer when fewer are there), splice
  /// out what came, hand what `to` did not take to `spill`. The pipe is empty
  /// again on return. Requires ready().
  SpliceStep move(int from, int to, size_t n, const Spill& spill);

  /// One read turn of a run of bytes: move() again and again, each time at
  /// most `left()` bytes (what the run still has to come) and the capacity,
  /// while both sockets keep up (all that was asked came, and all that came
  /// went out), until `max_bytes` moved, fewer than `min_bytes` are left,
  /// or an error. `on_step` sees every move before the next (the caller
  /// advances its parser and counts). Requires ready().
  SpliceRun run(int from, int to, const std::function<uint64_t()>& left, size_t min_bytes,
                size_t max_bytes, const Spill& spill,
                const std::function<void(const SpliceStep&)>& on_step);

 private:
  /// Reads what the pipe holds (`n` bytes) into `spill`; false if it could not.
  bool drain(size_t n, const Spill& spill);
  void reset();  // closes the pipe; ready() makes a new one

  /// Bytes read back out of the pipe per read() when the destination did
  /// not take a move: a quarter of a full pipe, allocated on the first
  /// spill and kept (one per loop).
  static constexpr size_t kDrainBytes = 256 * 1024;
  std::unique_ptr<uint8_t[]> drain_buf_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  size_t capacity_ = 0;
  uint64_t failed_at_ns_ = 0;  // last failed pipe2(), 0: none
};

}  // namespace epochgate::proxy
