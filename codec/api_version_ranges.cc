// codec/api_version_ranges.cc
#include "codec/api_version_ranges.h"

#include <algorithm>

namespace epochgate::proxy {

void ApiVersionRanges::set(int16_t key, int16_t min_version, int16_t max_version) {
  if (key < 0 || key > kMaxKey || min_version < 0 || min_version > max_version) return;
  auto at = static_cast<size_t>(key);
  if (max_.size() <= at) {
    max_.resize(at + 1, -1);
    min_.resize(at + 1, -1);
  }
  min_[at] = min_version;
  max_[at] = max_version;
}

int16_t ApiVersionRanges::min(int16_t key) const {
  if (key < 0 || static_cast<size_t>(key) >= min_.size()) return -1;
  return min_[static_cast<size_t>(key)];
}

int16_t ApiVersionRanges::max(int16_t key) const {
  if (key < 0 || static_cast<size_t>(key) >= max_.size()) return -1;
  return max_[static_cast<size_t>(key)];
}

int16_t ApiVersionRanges::pick(int16_t key, int16_t lo, int16_t hi) const {
  if (!offers(key)) return -1;
  int16_t top = std::min(hi, max(key));
  int16_t bottom = std::max(lo, min(key));
  return top >= bottom && top >= 0 ? top : -1;
}

}  // namespace epochgate::proxy
