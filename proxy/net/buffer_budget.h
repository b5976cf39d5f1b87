// proxy/net/buffer_budget.h: the process-wide budget for bytes held in connection
// buffers and decoded requests (limits.buffer_budget_bytes). Connections and
// the policy report what they hold; above the budget, sessions stop reading
// new client requests until writes drain the buffers below it. Fair: over
// the budget only connections holding at least their share (the limit
// divided among the connections it governs) stop, so one peer, or a few,
// filling the budget never stops everyone else. Lock-free, shared by every
// worker.
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
  /// The limit in bytes.
  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }

  /// A connection whose reads the budget governs (a client connection)
  /// joins while it is open, and leaves when it closes.
  void join() { members_.fetch_add(1, std::memory_order_relaxed); }
  void leave() { members_.fetch_sub(1, std::memory_order_relaxed); }
  /// Bytes one member may hold while the budget is exceeded: the limit
  /// divided among the members (the whole limit without any).
  uint64_t fair_share() const {
    const uint32_t m = members_.load(std::memory_order_relaxed);
    return limit_.load(std::memory_order_relaxed) / (m == 0 ? 1 : m);
  }
  /// A member holding `held` bytes must not grow its buffers: the budget is
  /// exceeded and it holds at least its fair share.
  bool exceeded_for(uint64_t held) const { return exceeded() && held >= fair_share(); }

 private:
  std::atomic<uint32_t> members_{0};
  std::atomic<int64_t> used_{0};
  std::atomic<uint64_t> limit_;
};

/// Bytes held against a BufferBudget for as long as this object lives (a
/// decoded request, for example); movable, so the holder can pass it on to
/// whatever keeps the memory. A null budget counts nothing.
class BudgetCharge {
 public:
  BudgetCharge() = default;
  BudgetCharge(BufferBudget* budget, uint64_t bytes) : budget_(budget), bytes_(bytes) {
    if (budget_ != nullptr) budget_->add(static_cast<int64_t>(bytes_));
  }
  BudgetCharge(BudgetCharge&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) {
    o.budget_ = nullptr;
  }
  BudgetCharge& operator=(BudgetCharge&& o) noexcept {
    if (this != &o) {
      release();
      budget_ = o.budget_;
      bytes_ = o.bytes_;
      o.budget_ = nullptr;
    }
    return *this;
  }
  BudgetCharge(const BudgetCharge&) = delete;
  BudgetCharge& operator=(const BudgetCharge&) = delete;
  ~BudgetCharge() { release(); }

 private:
  void release() {
    if (budget_ != nullptr) budget_->add(-static_cast<int64_t>(bytes_));
    budget_ = nullptr;
  }
  BufferBudget* budget_ = nullptr;
  uint64_t bytes_ = 0;
};

}  // namespace epochgate::proxy
