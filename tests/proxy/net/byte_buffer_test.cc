// tests/proxy/net/byte_buffer_test.cc: cursors, compaction, growth, moves.
#include "proxy/net/byte_buffer.h"

#include <gtest/gtest.h>

#include <string>

namespace epochgate::proxy {
namespace {

TEST(ByteBuffer, AppendConsumeAndCompact) {
  ByteBuffer b(8);
  b.append("abcdef", 6);
  b.consume(4);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.begin()), b.size()), "ef");
  b.reserve_tail(6);  // fits after moving "ef" to the front
  EXPECT_EQ(b.capacity(), 8u);
  b.append("123456", 6);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.begin()), b.size()), "ef123456");
}

TEST(ByteBuffer, GrowsKeepingUnreadBytes) {
  ByteBuffer b(4);
  b.append("wxyz", 4);
  b.consume(1);
  b.append("0123456789", 10);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.begin()), b.size()), "xyz0123456789");
}

TEST(ByteBuffer, ConsumingEverythingResetsCursors) {
  ByteBuffer b(4);
  b.append("ab", 2);
  b.consume(2);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.tail_room(), 4u);
}

// Connections report capacity() to the buffer budget after handing their
// buffers back; a moved-from buffer that still claimed its capacity kept the
// budget from ever coming back down (faults.limits, CI of 2026-11-29).
TEST(ByteBuffer, MovedFromBufferIsEmptyWithNoCapacity) {
  ByteBuffer a(32);
  a.append("abc", 3);
  ByteBuffer b(std::move(a));
  EXPECT_FALSE(a.allocated());
  EXPECT_EQ(a.capacity(), 0u);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(b.capacity(), 32u);
  EXPECT_EQ(b.size(), 3u);
  ByteBuffer c(8);
  c = std::move(b);
  EXPECT_EQ(b.capacity(), 0u);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(c.begin()), c.size()), "abc");
}

}  // namespace
}  // namespace epochgate::proxy
