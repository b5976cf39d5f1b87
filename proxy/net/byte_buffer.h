// proxy/net/byte_buffer.h: a growable byte buffer with a read and a write cursor,
// used for socket input (libuv reads straight into its free tail) and output
// (frames appended, written from the head). Never zero-fills, never shrinks
// on its own; BufferPool hands out and takes back the storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

namespace epochgate::proxy {

/// Owned storage [data, data+capacity) holding unread bytes in [begin, end).
class ByteBuffer {
 public:
  ByteBuffer() = default;
  explicit ByteBuffer(size_t capacity) : data_(new uint8_t[capacity]), capacity_(capacity) {}
  // A moved-from buffer must read as empty and unallocated with capacity 0:
  // connections report capacity() to the buffer budget right after handing
  // a buffer back to the pool, and the defaulted moves would leave the size
  // fields behind (the budget then never came back down).
  ByteBuffer(ByteBuffer&& o) noexcept
      : data_(std::move(o.data_)),
        capacity_(std::exchange(o.capacity_, 0)),
        begin_(std::exchange(o.begin_, 0)),
        end_(std::exchange(o.end_, 0)) {}
  ByteBuffer& operator=(ByteBuffer&& o) noexcept {
    if (this != &o) {
      data_ = std::move(o.data_);
      capacity_ = std::exchange(o.capacity_, 0);
      begin_ = std::exchange(o.begin_, 0);
      end_ = std::exchange(o.end_, 0);
    }
    return *this;
  }

  bool allocated() const { return data_ != nullptr; }
  size_t capacity() const { return capacity_; }
  /// Unread bytes.
  size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  const uint8_t* begin() const { return data_.get() + begin_; }
  uint8_t* mutable_begin() { return data_.get() + begin_; }
  /// Free space after the unread bytes.
  size_t tail_room() const { return capacity_ - end_; }
  uint8_t* tail() { return data_.get() + end_; }

  /// Marks `n` bytes written into tail() as filled.
  void commit(size_t n) { end_ += n; }
  /// Marks `n` unread bytes as consumed; resets the cursors when empty.
  void consume(size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  void clear() { begin_ = end_ = 0; }

  /// Makes at least `n` bytes of tail room, moving unread bytes to the front
  /// and growing (to at least `n` + size()) when that is not enough.
  void reserve_tail(size_t n) {
    if (tail_room() >= n) return;
    if (begin_ > 0 && capacity_ - size() >= n) {
      std::memmove(data_.get(), data_.get() + begin_, size());
      end_ -= begin_;
      begin_ = 0;
      return;
    }
    // Double small buffers; grow large ones in 256 KiB steps, so a big frame
    // arriving slowly never holds much more memory than it has bytes.
    size_t want = capacity_ == 0 ? n
                  : capacity_ < (size_t{1} << 20) ? capacity_ * 2
                                                   : capacity_ + (size_t{256} << 10);
    if (want < size() + n) want = size() + n;
    std::unique_ptr<uint8_t[]> grown(new uint8_t[want]);
    if (size() > 0) std::memcpy(grown.get(), data_.get() + begin_, size());
    end_ = size();
    begin_ = 0;
    data_ = std::move(grown);
    capacity_ = want;
  }
  /// Appends bytes, growing as needed.
  void append(const void* p, size_t n) {
    reserve_tail(n);
    std::memcpy(tail(), p, n);
    end_ += n;
  }

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
};

}  // namespace epochgate::proxy
