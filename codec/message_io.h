// codec/message_io.h: whole-body decode and whole-frame encode for any
// generated message type (codec/messages/*.h). Must never: throw, or accept a
// body with bytes left over (those would be silently dropped on re-encode).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "codec/api_table.h"
#include "codec/header.h"
#include "codec/reader.h"
#include "codec/status.h"
#include "codec/writer.h"

namespace epochgate::codec {

/// Decodes a message body of `version` from [body, body+len) into `out`.
/// Errors: whatever M::decode reports, or kTrailingBytes when bytes remain
/// after the body (offset = where the garbage starts).
template <class M>
Status decode_body(const uint8_t* body, size_t len, int16_t version, M& out) {
  Reader r(body, len);
  Status s = out.decode(r, version);
  if (!s.ok()) return s;
  if (r.remaining() != 0) {
    r.fail(Errc::kTrailingBytes, M::kName);
    return r.status();
  }
  return s;
}

/// What one decode may build (in) and what it built (out); see
/// Reader::set_max_entries and Reader::decoded_bytes.
struct DecodeBounds {
  uint64_t max_entries = std::numeric_limits<uint64_t>::max();  ///< in: struct entries cap
  uint64_t entries = 0;        ///< out: struct entries and unknown tagged fields counted
  uint64_t decoded_bytes = 0;  ///< out: heap bytes the decoded objects hold
};

/// Like decode_body, but bytes left after the body are not an error: they are
/// returned in `trailing` (a view; empty when none). Real peers send such
/// bytes and Kafka brokers ignore them: librdkafka 2.15.1 pads its all-topics
/// Metadata v9+ request with 3 bytes, and its mock cluster adds one to
/// flexible Metadata responses (tests/codec/golden/README.md). A proxy that
/// forwards the original bytes should accept them; one that re-encodes can
/// append `trailing` to stay byte-identical.
/// `bounds` caps the entries built (kTooManyPartitions past it, detected at
/// the array count, before the array is allocated) and reports the tallies,
/// also on failure.
template <class M>
Status decode_body_allow_trailing(const uint8_t* body, size_t len, int16_t version, M& out,
                                  Bytes& trailing, DecodeBounds& bounds) {
  Reader r(body, len);
  r.set_max_entries(bounds.max_entries);
  Status s = out.decode(r, version);
  bounds.entries = r.entries();
  bounds.decoded_bytes = r.decoded_bytes();
  trailing = Bytes{};
  if (s.ok() && r.remaining() != 0)
    trailing = Bytes{r.position(), static_cast<uint32_t>(r.remaining()), false};
  return s;
}

/// decode_body_allow_trailing without a cap.
template <class M>
Status decode_body_allow_trailing(const uint8_t* body, size_t len, int16_t version, M& out,
                                  Bytes& trailing) {
  DecodeBounds unbounded;
  return decode_body_allow_trailing(body, len, version, out, trailing, unbounded);
}

namespace detail {
inline size_t begin_frame(std::vector<uint8_t>& out) {
  size_t at = out.size();
  out.insert(out.end(), 4, 0);
  return at;
}
inline void end_frame(std::vector<uint8_t>& out, size_t at) {
  uint32_t n = static_cast<uint32_t>(out.size() - at - 4);
  out[at] = static_cast<uint8_t>(n >> 24);
  out[at + 1] = static_cast<uint8_t>(n >> 16);
  out[at + 2] = static_cast<uint8_t>(n >> 8);
  out[at + 3] = static_cast<uint8_t>(n);
}
}  // namespace detail

/// Appends a whole request frame to `out`: 4-byte big-endian size, request
/// header, body of `version`. The header version is taken from the API table
/// for (M::kApiKey, version), whatever `h.header_version` says; api_key and
/// api_version are written as given in `h`.
template <class M>
void encode_frame(std::vector<uint8_t>& out, const RequestHeader& h, const M& m, int16_t version) {
  static_assert(M::kIsRequest, "a request header needs a request message");
  size_t at = detail::begin_frame(out);
  int hv = request_header_version(M::kApiKey, version);
  if (h.header_version == hv) {
    write_request_header(out, h);
  } else {
    RequestHeader copy = h;
    copy.header_version = hv;
    write_request_header(out, copy);
  }
  Writer w(out);
  m.encode(w, version);
  detail::end_frame(out, at);
}

/// Appends a whole response frame: size, response header of the version the
/// API table gives for (M::kApiKey, version) (ApiVersions: always v0), body.
template <class M>
void encode_frame(std::vector<uint8_t>& out, const ResponseHeader& h, const M& m, int16_t version) {
  static_assert(!M::kIsRequest, "a response header needs a response message");
  size_t at = detail::begin_frame(out);
  int hv = response_header_version(M::kApiKey, version);
  if (h.header_version == hv) {
    write_response_header(out, h);
  } else {
    ResponseHeader copy = h;
    copy.header_version = hv;
    write_response_header(out, copy);
  }
  Writer w(out);
  m.encode(w, version);
  detail::end_frame(out, at);
}

}  // namespace epochgate::codec
