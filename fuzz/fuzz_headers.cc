// fuzz/fuzz_headers.cc: libFuzzer target for request and response header
// parsing (codec/header.h) and the Produce acks peek the session does on
// every Produce (codec/request_peek.h). Oracles: peek_request_ids agrees with
// the full parse; a parsed header re-encodes to a header that parses to the
// same fields; the parse never claims more bytes than it was given.
//
// Input: [response header version selector u8][frame payload...]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "codec/api_table.h"
#include "codec/header.h"
#include "codec/request_peek.h"

namespace ec = epochgate::codec;

namespace {

[[noreturn]] void fail() { std::abort(); }

bool same(const ec::TaggedFields& a, const ec::TaggedFields& b) { return a == b; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int response_hv = data[0] & 1;
  const uint8_t* p = data + 1;
  size_t len = size - 1;

  // Request header.
  int16_t key = 0, version = 0;
  int32_t corr = 0;
  bool peeked = ec::peek_request_ids(p, len, key, version, corr);
  if (peeked != (len >= 8)) fail();
  ec::RequestHeader h;
  ec::Status s = ec::parse_request_header(p, len, h);
  if (s.ok()) {
    if (!peeked) fail();
    if (h.api_key != key || h.api_version != version || h.correlation_id != corr) fail();
    if (h.size > len) fail();
    if (h.header_version != ec::request_header_version(key, version)) fail();
    if (h.client_id && (reinterpret_cast<const uint8_t*>(h.client_id->data()) < p ||
                        reinterpret_cast<const uint8_t*>(h.client_id->data()) +
                                h.client_id->size() > p + len))
      fail();
    std::vector<uint8_t> again;
    ec::write_request_header(again, h);
    ec::RequestHeader h2;
    if (!ec::parse_request_header(again.data(), again.size(), h2).ok()) fail();
    if (h2.size != again.size() || h2.api_key != h.api_key || h2.api_version != h.api_version ||
        h2.correlation_id != h.correlation_id || h2.client_id != h.client_id ||
        !same(h2.tagged_fields, h.tagged_fields))
      fail();

    if (h.api_key == ec::kProduce) {
      // Whatever it says, it reads only inside the body (ASan checks).
      (void)epochgate::proxy::produce_acks(p + h.size, len - h.size, h.api_version);
    }
  }

  // Response header.
  ec::ResponseHeader r;
  ec::Status rs = ec::parse_response_header(p, len, response_hv, r);
  if (rs.ok()) {
    if (r.size > len || r.size < 4) fail();
    std::vector<uint8_t> again;
    ec::write_response_header(again, r);
    ec::ResponseHeader r2;
    if (!ec::parse_response_header(again.data(), again.size(), response_hv, r2).ok()) fail();
    if (r2.size != again.size() || r2.correlation_id != r.correlation_id ||
        !same(r2.tagged_fields, r.tagged_fields))
      fail();
  } else if (len >= 4 && response_hv == 0) {
    fail();  // v0 is just a correlation id
  }

  // The acks peek on any body and any Produce version, valid or not.
  (void)epochgate::proxy::produce_acks(p, len, static_cast<int16_t>((data[0] >> 1) % 16));
  return 0;
}
