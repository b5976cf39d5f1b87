// bench/kafka_load: one set of latency samples (µs) and the percentiles the
// report prints. Owns nothing but numbers; never does I/O except writing a
// plot data file on request.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace epochgate::bench {

/// Latency samples in microseconds. Not thread-safe: one writer.
class LatencySamples {
 public:
  void add_us(double us) { samples_.push_back(us); sorted_ = false; }
  void add_ns(long long ns) { add_us(static_cast<double>(ns) / 1000.0); }
  void merge(const LatencySamples& other);
  size_t count() const { return samples_.size(); }
  bool empty() const { return samples_.empty(); }
  void clear() { samples_.clear(); sorted_ = true; }

  /// Percentile `p` in [0, 100] (nearest rank) in µs; 0 when empty.
  double percentile(double p);
  double max();
  double mean() const;

  /// Writes "percentile latency_us" lines (0..99.99, log-spaced near the tail)
  /// for gnuplot. Returns false when the file cannot be written.
  bool write_percentile_curve(const std::string& path);

 private:
  void sort();
  std::vector<double> samples_;
  bool sorted_ = true;
};

}  // namespace epochgate::bench
