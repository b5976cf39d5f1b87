// codec/stream_fields.h: the few field readers the incremental parsers
// (codec/fetch_stream.h, codec/produce_stream.h) share: a length read by
// hand and a tagged-field section walked. A parser's unit holds only the
// start of an array, so Reader::array_length (which bounds a count by the
// bytes of the chunk at hand) does not fit them.
#pragma once

#include <cstdint>

#include "codec/reader.h"

namespace epochgate::proxy::stream_fields {

/// An array, bytes or string length: COMPACT (uvarint N+1, 0 null) or
/// int32 (-1 null) for arrays and bytes.
inline int64_t read_length(codec::Reader& r, bool compact) {
  if (compact) return static_cast<int64_t>(r.uvarint()) - 1;
  return r.int32();
}

/// Passes over a (nullable) STRING: COMPACT (uvarint N+1) or int16 length.
inline void skip_string(codec::Reader& r, bool compact) {
  int64_t len = compact ? static_cast<int64_t>(r.uvarint()) - 1 : r.int16();
  if (len > 0) r.skip(static_cast<size_t>(len));
  else if (len < -1) r.fail(codec::Errc::kNegativeLength, "string");
}

/// Walks one tagged-field section; calls f(tag, bytes) for each field.
template <typename F>
void read_tags(codec::Reader& r, F&& f) {
  uint32_t count = r.uvarint();
  int64_t previous = -1;
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    uint32_t tag = 0, size = 0;
    if (!r.tag_header(previous, tag, size)) return;
    previous = tag;
    codec::Bytes b = r.raw(size);
    if (r.ok()) f(tag, b);
  }
}

/// Passes over one tagged-field section. Unlike Reader::tag_header, a
/// field's bytes not all in the chunk are kTruncated (more may arrive);
/// tags out of order are kBadTaggedFields.
inline void skip_tags(codec::Reader& r) {
  uint32_t count = r.uvarint();
  int64_t previous = -1;
  for (uint32_t i = 0; i < count && r.ok(); ++i) {
    uint32_t tag = r.uvarint();
    uint32_t size = r.uvarint();
    if (!r.ok()) return;
    if (static_cast<int64_t>(tag) <= previous) {
      r.fail(codec::Errc::kBadTaggedFields, "tagged fields");
      return;
    }
    previous = tag;
    r.skip(size);
  }
}

}  // namespace epochgate::proxy::stream_fields
