// proxy/net/buffer_pool.h: per-worker pool of byte buffers, so idle connections
// hold no buffer memory and busy ones do not hit the allocator (and fault in
// fresh pages) for every read. Two tiers: fixed-size blocks for ordinary
// reads and queued output, and large buffers for frames bigger than a block,
// sized in classes so that one freed by one frame fits the next. Bounded:
// at most max_pooled blocks and max_large_kept_bytes of large buffers (16 MiB
// by default) are kept, and a large buffer no frame took for one trim()
// interval is freed; so are the blocks that stayed in the pool through a
// whole trim() interval, so a burst of connections leaves no blocks behind.
// Single-threaded: one pool per event loop.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "proxy/net/buffer_reclaimer.h"
#include "proxy/net/byte_buffer.h"

namespace epochgate::proxy {

/// Hands out ByteBuffers of at least `block_size` bytes and takes them back.
class BufferPool {
 public:
  /// `block_size` and the large-buffer cap `max_large_kept_bytes` in bytes;
  /// `max_pooled` blocks at most are kept. A pool that serves one large frame
  /// now and then (the refresher's Metadata answers, every 30 s) keeps no
  /// large buffer at all with a cap of 0.
  explicit BufferPool(size_t block_size = 64 * 1024, size_t max_pooled = 256,
                      size_t max_large_kept_bytes = kMaxLargeKeptBytes)
      : block_size_(block_size), max_pooled_(max_pooled),
        max_large_kept_bytes_(max_large_kept_bytes) {}

  /// A block of block_size() bytes: a pooled one if any, else new.
  ByteBuffer take() {
    if (free_.empty()) return ByteBuffer(block_size_);
    ByteBuffer b = std::move(free_.back());
    free_.pop_back();
    if (free_.size() < free_low_) free_low_ = free_.size();
    return b;
  }
  /// A buffer of at least `n` bytes. Up to block_size() a block; above it the
  /// smallest kept large buffer that fits and is at most kMaxReuseRatio
  /// times `n` (the most recently used of equal ones, whose pages are the
  /// likeliest to be warm), else a new one of large_size_class(n) bytes. The
  /// ratio bound matters because a frame's buffer is charged to the buffer
  /// budget at its capacity when it is handed on whole, and a reused
  /// buffer's pages are resident: a 300 KB frame must not hold a 4 MiB one.
  ByteBuffer take_at_least(size_t n) {
    if (n <= block_size_) return take();
    size_t best = large_.size();
    for (size_t i = large_.size(); i-- > 0;) {
      size_t cap = large_[i].buf.capacity();
      if (cap >= n && cap <= n * kMaxReuseRatio &&
          (best == large_.size() || cap < large_[best].buf.capacity()))
        best = i;
    }
    if (best == large_.size()) return ByteBuffer(large_size_class(n));
    ByteBuffer b = std::move(large_[best].buf);
    large_kept_bytes_ -= b.capacity();
    large_.erase(large_.begin() + static_cast<std::ptrdiff_t>(best));
    return b;
  }
  /// Takes `b` back (it may be moved-from or unallocated: then nothing
  /// happens). Blocks are kept up to max_pooled; a buffer larger than 4
  /// blocks is kept while it is at most kMaxLargeBytes and the kept large
  /// buffers stay within max_large_kept_bytes; anything else is freed (buffers
  /// of BufferReclaimer::kMinBytes and more off the loop).
  void give_back(ByteBuffer&& b) {
    if (!b.allocated()) return;
    b.clear();
    if (b.capacity() > 4 * block_size_) {
      if (b.capacity() <= kMaxLargeBytes && b.capacity() <= max_large_kept_bytes_) {
        // Room for the newest: the oldest kept ones go first.
        while (!large_.empty() && large_kept_bytes_ + b.capacity() > max_large_kept_bytes_)
          release_large(0);
        large_kept_bytes_ += b.capacity();
        large_.push_back({std::move(b), generation_});
        return;
      }
      free_large(std::move(b));
      return;
    }
    if (free_.size() >= max_pooled_) {
      b = ByteBuffer();
      return;
    }
    free_.push_back(std::move(b));
  }
  /// Frees the large buffers nothing took or gave back since the previous
  /// call, and as many blocks as stayed in the pool the whole time since
  /// then (the fewest it held), so a burst of large frames or of
  /// connections leaves no memory behind once it ends: a pool that serves
  /// a steady load keeps what that load takes. Called about once a second
  /// (the worker's sweep). Returns the bytes freed.
  size_t trim() {
    size_t freed = 0;
    for (size_t i = large_.size(); i-- > 0;) {
      if (large_[i].generation != generation_) {
        freed += large_[i].buf.capacity();
        release_large(i);
      }
    }
    ++generation_;
    size_t idle = std::min(free_low_, free_.size());
    for (size_t i = 0; i < idle; ++i) {
      freed += free_.back().capacity();
      free_.pop_back();
    }
    free_low_ = free_.size();
    return freed;
  }

  size_t block_size() const { return block_size_; }
  size_t pooled() const { return free_.size(); }
  /// Bytes the pool keeps for reuse: its blocks and its large buffers.
  size_t pooled_bytes() const { return free_.size() * block_size_ + large_kept_bytes_; }
  size_t pooled_large() const { return large_.size(); }
  /// Capacity of the kept large buffers (bytes).
  size_t pooled_large_bytes() const { return large_kept_bytes_; }

  /// The capacity a new large buffer gets for a frame of `n` bytes: `n`
  /// rounded up to a multiple of an eighth of the power of two at or below
  /// it (at most 12.5% more), so frames of similar sizes share buffers.
  /// Frames above kMaxLargeBytes, which are never kept, get exactly `n`.
  static size_t large_size_class(size_t n) {
    if (n > kMaxLargeBytes || n < 16) return n;
    size_t pow2 = 1;
    while (pow2 * 2 <= n) pow2 <<= 1;
    const size_t step = pow2 / 8;
    return (n + step - 1) / step * step;
  }

  /// The largest buffer kept (bytes), and the most kept in all, per pool (worker).
  static constexpr size_t kMaxLargeBytes = 4u << 20;
  static constexpr size_t kMaxLargeKeptBytes = 16u << 20;
  /// A kept buffer is reused for a frame of `n` bytes only if its capacity
  /// is at most n * kMaxReuseRatio.
  static constexpr size_t kMaxReuseRatio = 2;

 private:
  struct Kept {
    ByteBuffer buf;
    uint64_t generation;  // trim() interval in which it was last given back
  };
  void release_large(size_t i) {
    large_kept_bytes_ -= large_[i].buf.capacity();
    free_large(std::move(large_[i].buf));
    large_.erase(large_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  static void free_large(ByteBuffer&& b) {
    if (b.capacity() >= BufferReclaimer::kMinBytes)
      BufferReclaimer::instance().free_later(std::move(b));  // munmap off the loop
    else
      b = ByteBuffer();
  }

  size_t block_size_;
  size_t max_pooled_;
  size_t max_large_kept_bytes_;
  std::vector<ByteBuffer> free_;
  size_t free_low_ = 0;  // fewest blocks free_ held since the last trim()
  std::vector<Kept> large_;  // oldest first
  size_t large_kept_bytes_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace epochgate::proxy
