// codec/writer.h: appends Kafka primitive types to a byte vector. Encoding
// cannot fail: the caller owns what it encodes, so sizes are known to fit.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "codec/types.h"

namespace epochgate::codec {

/// Appends big-endian fixed ints, varints, (compact) strings, bytes, array
/// lengths and tagged-field headers to `out` (docs/architecture.md section 4).
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}

  size_t size() const { return out_.size(); }
  std::vector<uint8_t>& buffer() { return out_; }

  void int8(int8_t v) { out_.push_back(static_cast<uint8_t>(v)); }
  void int16(int16_t v) { fixed(static_cast<uint16_t>(v)); }
  void int32(int32_t v) { fixed(static_cast<uint32_t>(v)); }
  void int64(int64_t v) { fixed(static_cast<uint64_t>(v)); }
  void uint16(uint16_t v) { fixed(v); }
  void uint32(uint32_t v) { fixed(v); }
  void boolean(bool v) { out_.push_back(v ? 1 : 0); }
  void float64(double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    fixed(bits);
  }
  void uuid(const Uuid& u) { out_.insert(out_.end(), u.begin(), u.end()); }

  void uvarint(uint32_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<uint8_t>(v));
  }
  void varint(int32_t v) {
    uvarint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
  }
  void varlong(int64_t v) {
    uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
    while (z >= 0x80) {
      out_.push_back(static_cast<uint8_t>(z | 0x80));
      z >>= 7;
    }
    out_.push_back(static_cast<uint8_t>(z));
  }

  void string(std::string_view s, bool compact) {
    if (compact) {
      uvarint(static_cast<uint32_t>(s.size() + 1));
    } else {
      int16(static_cast<int16_t>(s.size()));
    }
    append(s.data(), s.size());
  }
  void nullable_string(const std::optional<std::string>& s, bool compact) {
    if (!s) {
      if (compact) uvarint(0); else int16(-1);
      return;
    }
    string(*s, compact);
  }
  void bytes(const Bytes& b, bool compact) {
    if (b.is_null) {
      if (compact) uvarint(0); else int32(-1);
      return;
    }
    if (compact) uvarint(b.size + 1); else int32(static_cast<int32_t>(b.size));
    append(b.data, b.size);
  }
  /// Array length; `count` -1 writes null.
  void array_length(int32_t count, bool compact) {
    if (compact) uvarint(count < 0 ? 0 : static_cast<uint32_t>(count) + 1);
    else int32(count);
  }
  void raw(const void* data, size_t n) { append(data, n); }

 private:
  template <typename T>
  void fixed(T v) {
    uint8_t b[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<uint8_t>(v >> (8 * (sizeof(T) - 1 - i)));
    out_.insert(out_.end(), b, b + sizeof(T));
  }
  void append(const void* p, size_t n) {
    if (n == 0) return;
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<uint8_t>& out_;
};

}  // namespace epochgate::codec
