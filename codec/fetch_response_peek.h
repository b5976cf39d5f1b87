// codec/fetch_response_peek.h: reads a FetchResponse body in place, for the
// common answer that needs no decoding: no error anywhere and nothing tagged
// (FetchResponse.json: no DivergingEpoch, CurrentLeader or SnapshotId on a
// partition, no NodeEndpoints). Records are skipped by their length, never
// read. Bounds-checked; allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/reader.h"

namespace epochgate::codec {

/// True when FetchResponse body `body` (after the response header) of
/// `version` (4-18) has ErrorCode 0 at the top (v7+) and on every
/// partition, and no tagged field anywhere; false as soon as one does not,
/// or when the body cannot be read (the caller then decodes it in full,
/// which reports what is wrong). Bytes after the body are not looked at (a
/// full decode ignores them too).
inline bool fetch_response_is_clean(const uint8_t* body, size_t len, int16_t version) {
  Reader r(body, len);
  const bool flex = version >= 12;
  if (version >= 1) r.int32();  // ThrottleTimeMs
  if (version >= 7) {
    if (r.int16() != 0) return false;  // ErrorCode
    r.int32();                         // SessionId
  }
  const int32_t topics = r.array_length(flex, false);
  if (!r.ok()) return false;
  for (int32_t t = 0; t < topics; ++t) {
    if (version <= 12) {
      const int64_t name_len = flex ? static_cast<int64_t>(r.uvarint()) - 1 : r.int16();
      if (!r.ok() || name_len < 0) return false;
      r.skip(static_cast<size_t>(name_len));  // Topic
    } else {
      r.uuid();  // TopicId
    }
    const int32_t parts = r.array_length(flex, false);
    if (!r.ok()) return false;
    for (int32_t i = 0; i < parts; ++i) {
      r.int32();  // PartitionIndex
      if (r.int16() != 0) return false;  // ErrorCode
      r.int64();                         // HighWatermark
      if (version >= 4) r.int64();       // LastStableOffset
      if (version >= 5) r.int64();       // LogStartOffset
      if (version >= 4) {
        const int32_t aborted = r.array_length(flex, true, 16);  // AbortedTransactions
        if (!r.ok()) return false;
        for (int32_t a = 0; a < aborted; ++a) {
          r.int64();  // ProducerId
          r.int64();  // FirstOffset
          if (flex && (r.tagged_count() != 0 || !r.ok())) return false;
        }
      }
      if (version >= 11) r.int32();  // PreferredReadReplica
      const int64_t records = flex ? static_cast<int64_t>(r.uvarint()) - 1 : r.int32();
      if (!r.ok() || records < -1) return false;
      if (records > 0) r.skip(static_cast<size_t>(records));  // Records (null: -1)
      if (flex && (r.tagged_count() != 0 || !r.ok())) return false;
    }
    if (flex && (r.tagged_count() != 0 || !r.ok())) return false;
  }
  if (flex && r.tagged_count() != 0) return false;
  return r.ok();
}

}  // namespace epochgate::codec
