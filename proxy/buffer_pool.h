// proxy/buffer_pool.h: per-worker pool of fixed-size byte buffers, so idle
// connections hold no buffer memory and busy ones do not hit the allocator
// for every read. Single-threaded: one pool per event loop.
#pragma once

#include <cstddef>
#include <vector>

#include "proxy/byte_buffer.h"

namespace epochgate::proxy {

/// Hands out ByteBuffers of at least `block_size` bytes and takes them back.
/// Buffers that grew beyond 4x the block size (a large frame) are freed on
/// return instead of pooled, so the pool's memory stays bounded.
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
  void give_back(ByteBuffer&& b) {
    if (!b.allocated() || b.capacity() > 4 * block_size_ || free_.size() >= max_pooled_) {
      b = ByteBuffer();
      return;
    }
    b.clear();
    free_.push_back(std::move(b));
  }
  size_t block_size() const { return block_size_; }
  size_t pooled() const { return free_.size(); }

 private:
  size_t block_size_;
  size_t max_pooled_;
  std::vector<ByteBuffer> free_;
};

}  // namespace epochgate::proxy
