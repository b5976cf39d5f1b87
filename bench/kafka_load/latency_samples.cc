// bench/kafka_load: percentiles over latency samples (nearest rank).
#include "latency_samples.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace epochgate::bench {

void LatencySamples::merge(const LatencySamples& other) {
  samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
  sorted_ = false;
}

void LatencySamples::sort() {
  if (!sorted_) std::sort(samples_.begin(), samples_.end());
  sorted_ = true;
}

double LatencySamples::percentile(double p) {
  if (samples_.empty()) return 0;
  sort();
  const double rank = std::ceil(p / 100.0 * static_cast<double>(samples_.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  if (index >= samples_.size()) index = samples_.size() - 1;
  return samples_[index];
}

double LatencySamples::max() {
  if (samples_.empty()) return 0;
  sort();
  return samples_.back();
}

double LatencySamples::mean() const {
  if (samples_.empty()) return 0;
  return std::accumulate(samples_.begin(), samples_.end(), 0.0) /
         static_cast<double>(samples_.size());
}

bool LatencySamples::write_percentile_curve(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f, "# percentile latency_us (n=%zu)\n", samples_.size());
  // Plotted against 1/(1-p): the tail gets as much room as the median.
  for (double nines = 0.0; nines <= 4.0001; nines += 0.05) {
    const double p = 100.0 * (1.0 - std::pow(10.0, -nines));
    std::fprintf(f, "%.4f %.2f\n", p, percentile(p));
  }
  std::fclose(f);
  return true;
}

}  // namespace epochgate::bench
