// tests/codec/opaque_records.h: record bytes for the stream parsers' tests.
// The parsers never look inside a Records run, so any bytes of the right
// length will do; seeded, so a failing case repeats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace epochgate::test {

/// `n` pseudo-random bytes from `seed`.
inline std::vector<uint8_t> records_of(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rnd(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rnd());
  return v;
}

}  // namespace epochgate::test
