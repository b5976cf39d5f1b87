// codec/types.h: wire value types shared by the hand-written and generated codec.
// Bytes is a view into the frame being decoded: record data is never copied
// or decompressed by decode; encode copies the viewed bytes as they are.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace epochgate::codec {

/// A (nullable) byte range inside a frame: `bytes`, `records` and raw tagged
/// field payloads. Does not own memory: valid while the frame buffer lives.
struct Bytes {
  const uint8_t* data = nullptr;
  uint32_t size = 0;
  bool is_null = false;

  static Bytes null() { return Bytes{nullptr, 0, true}; }
  std::string_view view() const {
    return {reinterpret_cast<const char*>(data), size};
  }
  bool operator==(const Bytes& o) const {
    return is_null == o.is_null && view() == o.view();
  }
};

/// Kafka UUID: 16 raw bytes (topic ids). All zero is Kafka's "zero UUID".
using Uuid = std::array<uint8_t, 16>;

/// A tagged field the schema does not know, kept to be written back unchanged.
struct TaggedField {
  uint32_t tag = 0;
  Bytes data;
  bool operator==(const TaggedField& o) const { return tag == o.tag && data == o.data; }
};

/// Unknown tagged fields of one struct, in wire order (strictly ascending tags).
using TaggedFields = std::vector<TaggedField>;

}  // namespace epochgate::codec
