// fuzz/fuzz_frame_splitter.cc: libFuzzer target for codec/frame_splitter.h.
// Differential: the stateless scan_frame() over the whole stream and the
// resumable FrameSplitter fed in fuzzer-chosen chunk sizes must agree frame
// for frame, and neither may read past its input. Must never allocate more
// than the size prefix allows (ASan catches a wrong bound).
//
// Input: [max_frame_size selector u8][chunk plan u8 x 8][stream bytes...]
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "codec/frame_splitter.h"

using epochgate::codec::Errc;
using epochgate::codec::FrameScan;
using epochgate::codec::FrameSplitter;
using epochgate::codec::scan_frame;

namespace {

[[noreturn]] void fail() { std::abort(); }

struct Outcome {
  std::vector<std::vector<uint8_t>> frames;
  Errc error = Errc::kOk;
};

Outcome scan_all(const uint8_t* data, size_t len, uint32_t max) {
  Outcome o;
  size_t at = 0;
  while (at < len) {
    FrameScan s = scan_frame(data + at, len - at, max);
    if (s.kind == FrameScan::Kind::kError) {
      if (s.error != Errc::kNegativeFrameSize && s.error != Errc::kFrameTooLarge) fail();
      o.error = s.error;
      return o;
    }
    if (s.kind == FrameScan::Kind::kNeedMore) {
      // It asks for more than it has, never for less.
      if (s.size <= len - at) fail();
      return o;
    }
    if (s.size > max || 4 + s.size > len - at) fail();
    o.frames.emplace_back(data + at + 4, data + at + 4 + s.size);
    at += 4 + s.size;
  }
  return o;
}

Outcome split_all(const uint8_t* data, size_t len, uint32_t max, const uint8_t* plan) {
  Outcome o;
  FrameSplitter fs(max);
  size_t at = 0;
  unsigned step = 0;
  while (at < len) {
    size_t chunk = 1 + plan[step++ % 8] % 64;
    if (plan[0] & 0x80) chunk *= 97;  // sometimes big reads, many frames each
    if (chunk > len - at) chunk = len - at;
    size_t used = 0;
    while (used < chunk) {
      size_t n = fs.feed(data + at + used, chunk - used);
      if (n > chunk - used) fail();
      used += n;
      if (fs.failed()) {
        o.error = fs.error();
        return o;
      }
      if (fs.ready()) {
        if (fs.frame().size() > max) fail();
        o.frames.push_back(fs.frame());
        fs.next();
      } else if (n == 0) {
        fail();  // neither ready nor failed, yet took nothing: it would spin
      }
    }
    at += chunk;
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9) return 0;
  // Up to Kafka's default: a larger maximum only makes reserve() bigger.
  static const uint32_t kMax[] = {0, 1, 8, 64, 1024, 65536, 1u << 20,
                                  epochgate::codec::kDefaultMaxFrameSize};
  uint32_t max = kMax[data[0] % 8];
  const uint8_t* plan = data + 1;
  const uint8_t* stream = data + 9;
  size_t len = size - 9;

  Outcome a = scan_all(stream, len, max);
  Outcome b = split_all(stream, len, max, plan);
  if (a.error != b.error) fail();
  if (a.frames != b.frames) fail();
  return 0;
}
