// metrics/folded_histogram.h: a histogram the data path observes without a
// lock. prometheus::Histogram::Observe takes a mutex and updates two
// atomic doubles by compare-and-swap on every call; here an observation is
// two relaxed atomic additions, and the counts are folded into the
// prometheus::Histogram that exposes them (same family, labels, buckets and
// HELP) before every scrape.
#pragma once

#include <prometheus/histogram.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace epochgate::metrics {

/// Lock-free counts for one exposed prometheus::Histogram. observe() is
/// safe from any thread; fold() from any thread too (it only moves what
/// it takes). A scrape that races an observation may show its bucket count
/// one fold before its sum.
class FoldedHistogram {
 public:
  /// `exposed` and `bounds` (its bucket upper bounds, ascending) must
  /// outlive this.
  FoldedHistogram(prometheus::Histogram& exposed, const std::vector<double>& bounds)
      : exposed_(exposed),
        bounds_(bounds),
        counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds.size() + 1)) {}

  /// Counts `value` (seconds, for the latency histograms) in the first
  /// bucket whose bound is not below it, else +Inf: the bucket
  /// Histogram::Observe picks (a NaN lands in the first, as there).
  void observe(double value) {
    const auto at = std::lower_bound(bounds_.begin(), bounds_.end(), value);
    counts_[static_cast<std::size_t>(at - bounds_.begin())].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
  }

  /// Adds the observations made since the last fold to the exposed
  /// histogram (Histogram::ObserveMultiple); nothing when there were none.
  void fold() {
    std::vector<double> increments(bounds_.size() + 1);
    bool any = false;
    for (std::size_t i = 0; i < increments.size(); ++i) {
      const uint64_t n = counts_[i].exchange(0, std::memory_order_relaxed);
      increments[i] = static_cast<double>(n);
      any = any || n != 0;
    }
    const double sum = sum_.exchange(0.0, std::memory_order_relaxed);
    if (any || sum != 0.0) exposed_.ObserveMultiple(increments, sum);
  }

 private:
  prometheus::Histogram& exposed_;
  const std::vector<double>& bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

}  // namespace epochgate::metrics
