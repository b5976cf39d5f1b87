// codec/wire_ints.h: big-endian integers at a byte pointer, for the few
// places a session patches a frame in place (a bridged version, a
// correlation id in an answer epochgate builds). No bounds checks: callers
// hold whole frames.
#pragma once

#include <cstdint>

namespace epochgate::proxy {

inline int32_t read_be32(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                              (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

inline void write_be16(uint8_t* p, int16_t v) {
  p[0] = static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8);
  p[1] = static_cast<uint8_t>(v);
}

inline void write_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

}  // namespace epochgate::proxy
