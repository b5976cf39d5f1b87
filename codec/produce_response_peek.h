// codec/produce_response_peek.h: reads a ProduceResponse body in place, for
// the common answer that needs no decoding: every partition succeeded and
// nothing is tagged (ProduceResponse.json: no KIP-951 CurrentLeader, no
// NodeEndpoints). Bounds-checked; allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "codec/reader.h"
#include "codec/types.h"

namespace epochgate::codec {

/// One partition of a clean ProduceResponse: its topic's name (v0-12) or
/// id (v13+; the name is then empty) and its index.
struct CleanProducePartition {
  std::string_view topic;
  Uuid topic_id{};
  int32_t partition = 0;
};

namespace detail {

// STRING / COMPACT_STRING (nullable or not) as a view; false when null
// (`null_ok` false), or when it cannot be read.
inline bool peek_string(Reader& r, bool compact, bool null_ok, std::string_view& out,
                        bool& is_null) {
  int64_t len = compact ? static_cast<int64_t>(r.uvarint()) - 1 : r.int16();
  is_null = len < 0;
  if (!r.ok() || (is_null && !null_ok)) return false;
  if (is_null) return true;
  Bytes b = r.raw(static_cast<uint32_t>(len));
  if (!r.ok()) return false;
  out = std::string_view(reinterpret_cast<const char*>(b.data), b.size);
  return true;
}

}  // namespace detail

/// Walks ProduceResponse body `body` (after the response header) of
/// `version` and calls `each(const CleanProducePartition&)` for every
/// partition. True only when every ErrorCode is 0, no partition carries
/// record errors or an error message, and no tagged field is present
/// anywhere; false as soon as one is, or when the body cannot be read (the
/// caller then decodes it in full, which reports what is wrong). Bytes
/// after the body are not looked at (a full decode ignores them too).
template <typename Each>
bool peek_clean_produce_response(const uint8_t* body, size_t len, int16_t version, Each&& each) {
  Reader r(body, len);
  const bool flex = version >= 9;
  const int32_t topics = r.array_length(flex, false);
  if (!r.ok()) return false;
  for (int32_t t = 0; t < topics; ++t) {
    CleanProducePartition p;
    bool is_null = false;
    if (version <= 12) {
      if (!detail::peek_string(r, flex, false, p.topic, is_null)) return false;
    } else {
      p.topic_id = r.uuid();
    }
    const int32_t parts = r.array_length(flex, false);
    if (!r.ok()) return false;
    for (int32_t i = 0; i < parts; ++i) {
      p.partition = r.int32();
      const int16_t error = r.int16();
      r.int64();                    // BaseOffset
      if (version >= 2) r.int64();  // LogAppendTimeMs
      if (version >= 5) r.int64();  // LogStartOffset
      if (!r.ok() || error != 0) return false;
      if (version >= 8) {
        if (r.array_length(flex, false) != 0 || !r.ok()) return false;  // RecordErrors
        std::string_view message;
        if (!detail::peek_string(r, flex, true, message, is_null) || !is_null) return false;
      }
      if (flex && (r.tagged_count() != 0 || !r.ok())) return false;
      each(static_cast<const CleanProducePartition&>(p));
    }
    if (flex && (r.tagged_count() != 0 || !r.ok())) return false;
  }
  if (version >= 1) r.int32();  // ThrottleTimeMs
  if (flex && r.tagged_count() != 0) return false;
  return r.ok();
}

}  // namespace epochgate::codec
