// proxy/net/buffer_reclaimer.h: frees large buffers (frames of many MiB) on a
// background thread. Returning 100 MiB of touched pages to the kernel
// (munmap) takes 10 ms or more of one core; done on an event loop, it held
// every other connection of that worker. Process-wide; must never free a
// buffer that anything still points into, or hold more than it was handed.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "proxy/net/byte_buffer.h"

namespace epochgate::proxy {

/// One thread that deletes what it is handed, in order. Thread-safe.
class BufferReclaimer {
 public:
  /// Buffers at least this large (bytes) are worth a hand-off.
  static constexpr size_t kMinBytes = 4u << 20;

  /// The process's reclaimer (its thread starts on first use, joins at exit).
  static BufferReclaimer& instance();
  /// Frees `b` soon, off the caller's thread.
  void free_later(ByteBuffer&& b);

  BufferReclaimer();
  ~BufferReclaimer();
  BufferReclaimer(const BufferReclaimer&) = delete;
  BufferReclaimer& operator=(const BufferReclaimer&) = delete;

 private:
  void run();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ByteBuffer> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace epochgate::proxy
