// proxy/request_peek.cc
#include "proxy/request_peek.h"

#include "codec/reader.h"

namespace epochgate::proxy {

std::optional<int16_t> produce_acks(const uint8_t* body, size_t len, int16_t version) {
  codec::Reader r(body, len);
  if (version >= 3) r.nullable_string(version >= 9);
  int16_t acks = r.int16();
  if (!r.ok()) return std::nullopt;
  return acks;
}

}  // namespace epochgate::proxy
