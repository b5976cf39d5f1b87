// proxy/net/buffer_reclaimer.cc
#include "proxy/net/buffer_reclaimer.h"

namespace epochgate::proxy {

BufferReclaimer& BufferReclaimer::instance() {
  static BufferReclaimer r;
  return r;
}

BufferReclaimer::BufferReclaimer() : thread_([this] { run(); }) {}

BufferReclaimer::~BufferReclaimer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void BufferReclaimer::free_later(ByteBuffer&& b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(b));
  }
  cv_.notify_one();
}

void BufferReclaimer::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    while (!pending_.empty()) {
      ByteBuffer b = std::move(pending_.front());
      pending_.pop_front();
      lock.unlock();
      b = ByteBuffer();  // the munmap happens here, off every event loop
      lock.lock();
    }
    if (stopping_) return;
  }
}

}  // namespace epochgate::proxy
