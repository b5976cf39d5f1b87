// proxy/buffer_pool.h: per-worker pool of fixed-size byte buffers, so idle
// connections hold no buffer memory and busy ones do not hit the allocator
// for every read. Single-threaded: one pool per event loop.
#pragma once

#include <cstddef>
#include <vector>

#include "proxy/buffer_reclaimer.h"
#include "proxy/byte_buffer.h"

namespace epochgate::proxy {

/// Hands out ByteBuffers of at least `block_size` bytes and takes them back.
/// Of the buffers that grew beyond 4x the block size (large frames) at most
/// kMaxLarge of up to kMaxLargeBytes are kept; the rest are freed, so the
/// pool's memory stays bounded.
class BufferPool {
 public:
  explicit BufferPool(size_t block_size = 64 * 1024, size_t max_pooled = 256)
      : block_size_(block_size), max_pooled_(max_pooled) {}

  ByteBuffer take() {
    if (free_.empty()) return ByteBuffer(block_size_);
    ByteBuffer b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  /// A buffer of at least `n` bytes: a kept large one if it fits, else new.
  ByteBuffer take_at_least(size_t n) {
    if (n <= block_size_) return take();
    for (auto it = large_.begin(); it != large_.end(); ++it) {
      if (it->capacity() >= n) {
        ByteBuffer b = std::move(*it);
        large_.erase(it);
        return b;
      }
    }
    return ByteBuffer(n);
  }
  void give_back(ByteBuffer&& b) {
    if (!b.allocated()) return;
    b.clear();
    if (b.capacity() > 4 * block_size_) {
      // Keep a few large buffers: a connection streaming multi-MiB Fetch
      // responses then reuses memory that is already faulted in.
      if (b.capacity() <= kMaxLargeBytes && large_.size() < kMaxLarge) {
        large_.push_back(std::move(b));
      } else if (b.capacity() >= BufferReclaimer::kMinBytes) {
        BufferReclaimer::instance().free_later(std::move(b));  // munmap off the loop
      } else {
        b = ByteBuffer();
      }
      return;
    }
    if (free_.size() >= max_pooled_) {
      b = ByteBuffer();
      return;
    }
    free_.push_back(std::move(b));
  }
  size_t block_size() const { return block_size_; }
  size_t pooled() const { return free_.size(); }
  size_t pooled_large() const { return large_.size(); }

  /// Large buffers kept per pool (worker), and the largest kept (bytes).
  static constexpr size_t kMaxLarge = 2;
  static constexpr size_t kMaxLargeBytes = 4u << 20;

 private:
  size_t block_size_;
  size_t max_pooled_;
  std::vector<ByteBuffer> free_;
  std::vector<ByteBuffer> large_;
};

}  // namespace epochgate::proxy
