// tests/proxy/net/buffer_pool_test.cc: the per-worker buffer pool: blocks reused
// up to their cap, large buffers in size classes, reused by the next frame
// that fits, kept within a byte cap and freed once no frame took them for a
// trim interval; blocks no one took for a trim interval are freed too.
#include "proxy/net/buffer_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace epochgate::proxy {
namespace {

TEST(BufferPool, GiveBackLeavesTheCallerHoldingNothing) {
  BufferPool pool(16, 1);
  ByteBuffer pooled = pool.take();
  ByteBuffer large(1000);                         // kept as a large buffer
  ByteBuffer extra = pool.take(), dropped = pool.take();
  pool.give_back(std::move(pooled));
  pool.give_back(std::move(large));
  pool.give_back(std::move(extra));               // pool full: freed
  for (const ByteBuffer* b : {&pooled, &large, &extra}) {
    EXPECT_EQ(b->capacity(), 0u);
    EXPECT_FALSE(b->allocated());
  }
  EXPECT_EQ(dropped.capacity(), 16u);
}

TEST(BufferPool, ReusesBlocksAndFreesOversizedOnes) {
  BufferPool pool(16, 2);
  ByteBuffer a = pool.take();
  const uint8_t* storage = a.tail();
  pool.give_back(std::move(a));
  ByteBuffer again = pool.take();
  EXPECT_EQ(again.tail(), storage);
  again.reserve_tail(1000);  // grew for a large frame
  pool.give_back(std::move(again));
  EXPECT_EQ(pool.pooled(), 0u);
}

TEST(BufferPool, LargeBuffersComeInSizeClassesAtMostAnEighthAboveTheFrame) {
  EXPECT_EQ(BufferPool::large_size_class(480123), 480u * 1024);  // 2^18 / 8 steps
  EXPECT_EQ(BufferPool::large_size_class(300000), 320u * 1024);  // 2^18 / 8 steps
  EXPECT_EQ(BufferPool::large_size_class(262144), 262144u);      // a class itself
  for (size_t n : {65537u, 131071u, 300000u, 480123u, 1000001u, 4000000u}) {
    size_t c = BufferPool::large_size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, n + n / 8 + 1) << n;
  }
  // Never kept, so never rounded: a huge frame gets exactly its size.
  EXPECT_EQ(BufferPool::large_size_class(BufferPool::kMaxLargeBytes + 1),
            BufferPool::kMaxLargeBytes + 1);
}

TEST(BufferPool, ALargeBufferIsReusedByTheNextFrameOfASimilarSize) {
  BufferPool pool(64 * 1024, 4);
  ByteBuffer first = pool.take_at_least(480123);
  const uint8_t* storage = first.tail();
  pool.give_back(std::move(first));
  EXPECT_EQ(pool.pooled_large(), 1u);
  ByteBuffer next = pool.take_at_least(481000);  // a little larger: same class
  EXPECT_EQ(next.tail(), storage);
  EXPECT_EQ(pool.pooled_large(), 0u);
  EXPECT_EQ(pool.pooled_large_bytes(), 0u);
}

TEST(BufferPool, TakesTheSmallestKeptBufferThatFits) {
  BufferPool pool(64 * 1024, 4);
  ByteBuffer big = pool.take_at_least(2u << 20), small = pool.take_at_least(300000);
  const uint8_t* small_storage = small.tail();
  pool.give_back(std::move(small));
  pool.give_back(std::move(big));
  ByteBuffer b = pool.take_at_least(290000);
  EXPECT_EQ(b.tail(), small_storage);
  EXPECT_EQ(pool.pooled_large(), 1u);  // the 2 MiB one waits for a larger frame
}

TEST(BufferPool, AKeptBufferFarLargerThanTheFrameIsNotTaken) {
  // Handed on whole, a frame's buffer is charged at its capacity, and a kept
  // buffer's pages are resident: a 300 KB frame gets a buffer of its own
  // size class, never the 2 MiB one a larger frame left.
  BufferPool pool(64 * 1024, 4);
  pool.give_back(pool.take_at_least(2u << 20));
  for (size_t n : {size_t{300000}, size_t{1000000}}) {
    ByteBuffer b = pool.take_at_least(n);
    EXPECT_GE(b.capacity(), n);
    EXPECT_LE(b.capacity(), n * BufferPool::kMaxReuseRatio) << n;
  }
  EXPECT_EQ(pool.pooled_large(), 1u) << "the 2 MiB buffer is still kept";
  // A frame at least half its size takes it.
  EXPECT_EQ(pool.take_at_least(1100000).capacity(), size_t{2u << 20});
}

TEST(BufferPool, APoolWithNoLargeCapKeepsNoLargeBuffer) {
  BufferPool pool(16 * 1024, 4, 0);
  pool.give_back(pool.take_at_least(500000));
  EXPECT_EQ(pool.pooled_large(), 0u);
  EXPECT_EQ(pool.pooled_large_bytes(), 0u);
  pool.give_back(pool.take());
  EXPECT_EQ(pool.pooled(), 1u) << "blocks are kept as before";
}

TEST(BufferPool, KeptLargeBuffersStayWithinTheirByteCapKeepingTheNewest) {
  BufferPool pool(64 * 1024, 4);
  std::vector<ByteBuffer> out;
  for (int i = 0; i < 12; ++i) out.push_back(pool.take_at_least(3u << 20));  // 3 MiB class
  const uint8_t* newest = out.back().tail();
  for (ByteBuffer& b : out) pool.give_back(std::move(b));
  EXPECT_LE(pool.pooled_large_bytes(), BufferPool::kMaxLargeKeptBytes);
  EXPECT_EQ(pool.pooled_large(), BufferPool::kMaxLargeKeptBytes / (3u << 20));
  EXPECT_EQ(pool.take_at_least(3u << 20).tail(), newest);
}

TEST(BufferPool, NothingAboveTheLargestKeptSizeIsKept) {
  BufferPool pool(64 * 1024, 4);
  pool.give_back(pool.take_at_least(BufferPool::kMaxLargeBytes + 1));
  EXPECT_EQ(pool.pooled_large(), 0u);
  EXPECT_EQ(pool.pooled_large_bytes(), 0u);
}

TEST(BufferPool, TrimFreesLargeBuffersNoFrameTookForAWholeInterval) {
  BufferPool pool(64 * 1024, 4);
  pool.give_back(pool.take_at_least(500000));
  pool.trim();  // given back in this interval: kept
  EXPECT_EQ(pool.pooled_large(), 1u);
  // Busy: taken and given back in every interval, it stays.
  for (int i = 0; i < 3; ++i) {
    pool.give_back(pool.take_at_least(500000));
    pool.trim();
    EXPECT_EQ(pool.pooled_large(), 1u);
  }
  pool.trim();  // a whole interval untouched: freed
  EXPECT_EQ(pool.pooled_large(), 0u);
  EXPECT_EQ(pool.pooled_large_bytes(), 0u);
}

TEST(BufferPool, TrimFreesBlocksThatStayedUnusedForAWholeInterval) {
  BufferPool pool(64 * 1024, 8);
  std::vector<ByteBuffer> held;
  for (int i = 0; i < 3; ++i) held.push_back(pool.take());
  for (auto& b : held) pool.give_back(std::move(b));
  EXPECT_EQ(pool.trim(), 0u) << "given back in this interval: kept";
  EXPECT_EQ(pool.pooled(), 3u);
  EXPECT_EQ(pool.pooled_bytes(), 3u * 64 * 1024);
  // A steady load that takes two at a time keeps two; the third goes.
  for (int round = 0; round < 3; ++round) {
    ByteBuffer a = pool.take(), b = pool.take();
    pool.give_back(std::move(a));
    pool.give_back(std::move(b));
    pool.trim();
    EXPECT_EQ(pool.pooled(), 2u) << "round " << round;
  }
  EXPECT_EQ(pool.trim(), 2u * 64 * 1024) << "a whole interval untouched: freed";
  EXPECT_EQ(pool.pooled(), 0u);
  EXPECT_EQ(pool.pooled_bytes(), 0u);
}

}  // namespace
}  // namespace epochgate::proxy
