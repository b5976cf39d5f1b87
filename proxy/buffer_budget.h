// proxy/buffer_budget.h: the process-wide budget for bytes held in connection
// buffers (limits.buffer_budget_bytes, issue 7). Connections report what they
// hold; above the budget, sessions stop reading new client requests until
// writes drain the buffers below it. Lock-free, shared by every worker.
#pragma once

#include <atomic>
#include <cstdint>

namespace epochgate::proxy {

/// Counts buffered bytes against a limit.
class BufferBudget {
 public:
  explicit BufferBudget(uint64_t limit_bytes = 1ull << 30) : limit_(limit_bytes) {}

  /// Adds `delta` bytes (negative when buffers are released).
  void add(int64_t delta) { used_.fetch_add(delta, std::memory_order_relaxed); }
  int64_t used() const { return used_.load(std::memory_order_relaxed); }
  /// True while more than the limit is held.
  bool exceeded() const {
    return used() > static_cast<int64_t>(limit_.load(std::memory_order_relaxed));
  }
  void set_limit(uint64_t limit_bytes) { limit_.store(limit_bytes, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> used_{0};
  std::atomic<uint64_t> limit_;
};

}  // namespace epochgate::proxy
