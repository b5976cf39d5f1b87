// metrics/label_interner.h: maps label keys seen at run time (node ids, reason
// strings) to a fixed number of slots, so metric children can live in plain
// arrays and the hot path never allocates or builds label maps. Once the
// capacity is used up, new keys share the overflow slot ("other"): a label
// set must never grow with input from the network.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>

namespace epochgate::metrics {

/// Interns up to `N` distinct keys. Lookups of known keys are lock-free
/// (acquire load of the count, then a linear scan of immutable entries); a new
/// key takes a mutex once. Thread-safe. `Key` must be copyable and comparable
/// with `Probe` (e.g. std::string with std::string_view).
template <typename Key, std::size_t N>
class LabelInterner {
 public:
  static constexpr std::size_t kOverflow = N;  ///< slot of every key past the cap

  /// Slot of `key` in [0, N), or kOverflow when the table is full.
  template <typename Probe>
  std::size_t slot(const Probe& key) {
    std::size_t n = size_.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < n; ++i) {
      if (keys_[i] == key) return i;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    n = size_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      if (keys_[i] == key) return i;
    }
    if (n == N) return kOverflow;
    keys_[n] = Key(key);
    size_.store(n + 1, std::memory_order_release);
    return n;
  }

  /// Key stored in `slot` (only valid for slots returned by slot()).
  const Key& key(std::size_t slot) const { return keys_[slot]; }

 private:
  std::array<Key, N> keys_{};
  std::atomic<std::size_t> size_{0};
  std::mutex mutex_;
};

}  // namespace epochgate::metrics
