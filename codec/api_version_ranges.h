// codec/api_version_ranges.h: what a broker said it supports in its
// ApiVersions answer (Kafka protocol, KIP-35: [min, max] per API key), and
// the version epochgate's own requests go at: the highest version inside the
// broker's range, the codec's range and the caller's bounds. Pure data; never
// touches a socket or decides anything about clients' own requests.
#pragma once

#include <cstdint>
#include <vector>

namespace epochgate::proxy {

/// The broker's supported versions per API key. Keys past kMaxKey are not
/// remembered (bounded memory against a hostile answer).
class ApiVersionRanges {
 public:
  static constexpr int16_t kMaxKey = 511;

  /// Records [min_version, max_version] for `key` (ignored outside 0..kMaxKey
  /// or when min > max).
  void set(int16_t key, int16_t min_version, int16_t max_version);
  /// True when the broker listed `key`.
  bool offers(int16_t key) const { return max(key) >= 0; }
  /// The broker's lowest / highest version of `key`, -1 when not offered.
  int16_t min(int16_t key) const;
  int16_t max(int16_t key) const;
  /// Highest version v with broker_min <= v <= broker_max and lo <= v <= hi
  /// (the codec's and the caller's bounds, intersected by the caller); -1
  /// when the ranges do not meet or the broker does not offer `key`.
  int16_t pick(int16_t key, int16_t lo, int16_t hi) const;
  /// The highest versions, one per key (-1: not offered), as the dialer's
  /// users read them.
  const std::vector<int16_t>& max_versions() const { return max_; }

 private:
  std::vector<int16_t> min_;
  std::vector<int16_t> max_;
};

}  // namespace epochgate::proxy
