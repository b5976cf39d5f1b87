// tests/codec/frame_splitter_test.cc: splitting a byte stream into frames
// whatever the read sizes, and rejecting negative or oversized size prefixes.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "codec/frame_splitter.h"

namespace epochgate::codec {
namespace {

using Buf = std::vector<uint8_t>;

Buf frame_of(const Buf& payload) {
  uint32_t n = static_cast<uint32_t>(payload.size());
  Buf f(4 + payload.size());
  f[0] = static_cast<uint8_t>(n >> 24);
  f[1] = static_cast<uint8_t>(n >> 16);
  f[2] = static_cast<uint8_t>(n >> 8);
  f[3] = static_cast<uint8_t>(n);
  std::copy(payload.begin(), payload.end(), f.begin() + 4);
  return f;
}

// Feeds `stream` in chunks of `chunk` bytes, collecting frames.
std::vector<Buf> split(const Buf& stream, size_t chunk, FrameSplitter& fs) {
  std::vector<Buf> out;
  size_t pos = 0;
  while (pos < stream.size() && !fs.failed()) {
    size_t end = std::min(stream.size(), pos + chunk);
    while (pos < end && !fs.failed()) {
      pos += fs.feed(stream.data() + pos, end - pos);
      if (fs.ready()) {
        out.push_back(fs.frame());
        fs.next();
      }
    }
  }
  return out;
}

TEST(FrameSplitter, OneByteAtATimeAndManyFramesPerChunkGiveTheSameFrames) {
  std::vector<Buf> payloads = {{1, 2, 3}, {}, Buf(300, 7), {9}};
  Buf stream;
  for (auto& p : payloads) {
    Buf f = frame_of(p);
    stream.insert(stream.end(), f.begin(), f.end());
  }
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{5}, size_t{4096}}) {
    FrameSplitter fs;
    EXPECT_EQ(split(stream, chunk, fs), payloads) << "chunk " << chunk;
    EXPECT_FALSE(fs.failed());
  }
}

TEST(FrameSplitter, ZeroSizeFrameIsAnEmptyFrame) {
  FrameSplitter fs;
  Buf z{0, 0, 0, 0};
  EXPECT_EQ(fs.feed(z.data(), z.size()), 4u);
  ASSERT_TRUE(fs.ready());
  EXPECT_TRUE(fs.frame().empty());
}

TEST(FrameSplitter, NegativeSizeIsRejected) {
  FrameSplitter fs;
  Buf neg{0xff, 0xff, 0xff, 0xfe, 1, 2};
  fs.feed(neg.data(), neg.size());
  EXPECT_TRUE(fs.failed());
  EXPECT_EQ(fs.error(), Errc::kNegativeFrameSize);
  EXPECT_EQ(fs.feed(neg.data(), neg.size()), 0u);  // stays failed
}

TEST(FrameSplitter, OversizedFrameIsRejectedBeforeAllocating) {
  FrameSplitter fs(1024);
  Buf big{0x00, 0x00, 0x04, 0x01};  // 1025 > 1024
  fs.feed(big.data(), big.size());
  EXPECT_EQ(fs.error(), Errc::kFrameTooLarge);
  FrameSplitter def;
  Buf huge{0x7f, 0xff, 0xff, 0xff};  // 2 GiB > 100 MiB default
  def.feed(huge.data(), huge.size());
  EXPECT_EQ(def.error(), Errc::kFrameTooLarge);
  EXPECT_EQ(def.frame().capacity(), 0u);
}

TEST(FrameSplitter, FrameOfExactlyTheMaximumIsAccepted) {
  FrameSplitter fs(8);
  Buf f = frame_of(Buf(8, 1));
  EXPECT_EQ(split(f, 3, fs).size(), 1u);
}

TEST(FrameSplitter, ScanFrameSaysHowManyBytesAreNeeded) {
  Buf f = frame_of({1, 2, 3});
  EXPECT_EQ(scan_frame(f.data(), 2, 100).kind, FrameScan::Kind::kNeedMore);
  EXPECT_EQ(scan_frame(f.data(), 2, 100).size, 4u);
  FrameScan s = scan_frame(f.data(), 5, 100);
  EXPECT_EQ(s.kind, FrameScan::Kind::kNeedMore);
  EXPECT_EQ(s.size, 7u);
  s = scan_frame(f.data(), f.size(), 100);
  EXPECT_EQ(s.kind, FrameScan::Kind::kFrame);
  EXPECT_EQ(s.size, 3u);
  EXPECT_EQ(scan_frame(f.data(), f.size(), 2).error, Errc::kFrameTooLarge);
}

}  // namespace
}  // namespace epochgate::codec
