// codec/request_peek.cc
#include "codec/request_peek.h"

#include "codec/header.h"
#include "codec/reader.h"

namespace epochgate::proxy {

std::optional<int16_t> produce_acks(const uint8_t* body, size_t len, int16_t version) {
  codec::Reader r(body, len);
  if (version >= 3) r.nullable_string(version >= 9);
  int16_t acks = r.int16();
  if (!r.ok()) return std::nullopt;
  return acks;
}

std::optional<int32_t> request_own_wait_ms(int16_t key, const uint8_t* body, size_t len,
                                           int16_t version) {
  codec::Reader r(body, len);
  if (key == codec::kProduce) {
    if (version >= 3) r.nullable_string(version >= 9);
    r.int16();  // acks
  } else if (key == codec::kFetch) {
    if (version <= 14) r.int32();  // ReplicaId
  } else {
    return 0;
  }
  int32_t wait = r.int32();
  if (!r.ok()) return std::nullopt;
  return wait;
}

}  // namespace epochgate::proxy
