// fuzz/fuzz_decode.cc: libFuzzer target for every generated decoder entry
// point (codec/message_io.h decode_body and decode_body_allow_trailing, the
// ApiVersions fallback of codec/api_versions_io.h) behind real headers.
// Oracles: strict and lenient decoding agree; whatever decodes re-encodes,
// decodes back to an equal value and re-encodes byte-identical; a whole
// frame (header + body) built by encode_frame parses back to the same header
// and body. Must never call encode on a version decode refused.
//
// Input: [direction u8: even request, odd response][api_key i16][version i16]
//        [frame payload without size prefix: header, then body]
// Requests take key and version from their own header; responses from the
// prefix. An API the codec does not decode is mapped onto one that it does
// (key modulo the message count), so every input reaches some decoder.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "codec/api_table.h"
#include "codec/api_versions_io.h"
#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/all.h"

namespace ec = epochgate::codec;

namespace {

[[noreturn]] void fail() { std::abort(); }

template <class M>
std::vector<uint8_t> encode_body(const M& m, int16_t v) {
  std::vector<uint8_t> out;
  ec::Writer w(out);
  m.encode(w, v);
  return out;
}

// decode(encode(m)) == m and encode is stable.
template <class M>
void round_trip(const M& m, int16_t v) {
  std::vector<uint8_t> e1 = encode_body(m, v);
  M m2;
  ec::Status s = ec::decode_body(e1.data(), e1.size(), v, m2);
  if (!s.ok()) fail();
  if (!(m2 == m)) fail();
  if (encode_body(m2, v) != e1) fail();
}

template <class M>
void frame_round_trip(const M& m, int16_t v, const ec::RequestHeader* rh,
                      const ec::ResponseHeader* sh) {
  std::vector<uint8_t> frame;
  size_t header_size = 0;
  if constexpr (M::kIsRequest) {
    ec::encode_frame(frame, *rh, m, v);
    ec::RequestHeader back;
    if (!ec::parse_request_header(frame.data() + 4, frame.size() - 4, back).ok()) fail();
    if (back.api_key != rh->api_key || back.api_version != rh->api_version ||
        back.correlation_id != rh->correlation_id || back.client_id != rh->client_id)
      fail();
    header_size = back.size;
  } else {
    ec::encode_frame(frame, *sh, m, v);
    ec::ResponseHeader back;
    int hv = ec::response_header_version(M::kApiKey, v);
    if (!ec::parse_response_header(frame.data() + 4, frame.size() - 4, hv, back).ok()) fail();
    if (back.correlation_id != sh->correlation_id) fail();
    header_size = back.size;
  }
  uint32_t declared = (uint32_t{frame[0]} << 24) | (uint32_t{frame[1]} << 16) |
                      (uint32_t{frame[2]} << 8) | frame[3];
  if (declared != frame.size() - 4) fail();
  M m2;
  if (!ec::decode_body(frame.data() + 4 + header_size, frame.size() - 4 - header_size, v, m2).ok())
    fail();
  if (!(m2 == m)) fail();
}

template <class M>
void exercise(const uint8_t* body, size_t len, int16_t v, const ec::RequestHeader* rh,
              const ec::ResponseHeader* sh) {
  M strict;
  ec::Status s1 = ec::decode_body(body, len, v, strict);
  M lenient;
  ec::Bytes trailing;
  ec::Status s2 = ec::decode_body_allow_trailing(body, len, v, lenient, trailing);
  // Strict fails only where lenient fails too, or because of trailing bytes.
  if (s1.ok() != (s2.ok() && trailing.size == 0)) fail();
  if (!s2.ok() && s1.code != s2.code) fail();
  if (s2.ok() && trailing.size > 0) {
    if (s1.code != ec::Errc::kTrailingBytes) fail();
    if (trailing.data + trailing.size != body + len) fail();
  }
  if (s1.ok() && !(strict == lenient)) fail();
  if (!s2.ok()) {
    if (v >= M::kMinVersion && v <= M::kMaxVersion && s2.code == ec::Errc::kUnsupportedVersion)
      fail();
    return;
  }
  if (v < M::kMinVersion || v > M::kMaxVersion) fail();  // decoded a version it does not know
  round_trip(lenient, v);
  if (rh || sh) frame_round_trip(lenient, v, rh, sh);
}

template <class M>
bool matches(int16_t key, bool request) {
  return M::kApiKey == key && M::kIsRequest == request;
}

template <size_t I = 0>
void dispatch(size_t index, const uint8_t* body, size_t len, int16_t v,
              const ec::RequestHeader* rh, const ec::ResponseHeader* sh) {
  if constexpr (I < std::tuple_size_v<ec::AllMessages>) {
    if (index == I) {
      exercise<std::tuple_element_t<I, ec::AllMessages>>(body, len, v, rh, sh);
      return;
    }
    dispatch<I + 1>(index, body, len, v, rh, sh);
  }
}

template <size_t I = 0>
size_t index_of(int16_t key, bool request) {
  if constexpr (I < std::tuple_size_v<ec::AllMessages>) {
    if (matches<std::tuple_element_t<I, ec::AllMessages>>(key, request)) return I;
    return index_of<I + 1>(key, request);
  } else {
    return SIZE_MAX;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 5) return 0;
  const bool response = data[0] & 1;
  int16_t key = static_cast<int16_t>((data[1] << 8) | data[2]);
  int16_t version = static_cast<int16_t>((data[3] << 8) | data[4]);
  const uint8_t* payload = data + 5;
  size_t len = size - 5;
  constexpr size_t kCount = std::tuple_size_v<ec::AllMessages>;

  if (!response) {
    ec::RequestHeader h;
    if (!ec::parse_request_header(payload, len, h).ok()) return 0;
    if (h.size > len) fail();
    size_t index = index_of(h.api_key, true);
    bool known = index != SIZE_MAX;
    if (!known) index = static_cast<uint16_t>(h.api_key) % kCount;
    // The frame round trip needs the header to belong to the message type.
    dispatch(index, payload + h.size, len - h.size, h.api_version, known ? &h : nullptr, nullptr);
    return 0;
  }

  size_t index = index_of(key, false);
  bool known = index != SIZE_MAX;
  if (!known) index = static_cast<uint16_t>(key) % kCount;
  int hv = known ? ec::response_header_version(key, version) : (data[0] >> 1) & 1;
  ec::ResponseHeader h;
  if (!ec::parse_response_header(payload, len, hv, h).ok()) return 0;
  if (h.size > len) fail();
  const uint8_t* body = payload + h.size;
  size_t body_len = len - h.size;
  dispatch(index, body, body_len, version, nullptr, known ? &h : nullptr);

  if (key == ec::kApiVersions) {
    ec::ApiVersionsResponse m;
    int16_t used = -1;
    if (ec::decode_api_versions_response(body, body_len, version, m, used).ok()) {
      if (used < ec::ApiVersionsResponse::kMinVersion || used > ec::ApiVersionsResponse::kMaxVersion)
        fail();
      round_trip(m, used);
    }
  }
  return 0;
}
