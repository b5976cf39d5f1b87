// tests/codec/bounded_decode_test.cc: what one decode may build. A Produce v9
// frame whose topic array declares as many 3-byte entries as its bytes allow
// is refused at the array count once the entries pass the cap, before any of
// it is allocated; without a cap, a count the bytes cannot back never sizes a
// vector past what the frame holds; the entry tally and the decoded-bytes
// charge match what the decode really built (heap measured by a replaced
// operator new, not by the codec's own numbers).
#include <gtest/gtest.h>

// The replaced operator new/delete below pair malloc with free on purpose,
// and read the size header in front of the block they were given.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#pragma GCC diagnostic ignored "-Warray-bounds"

#include <algorithm>
#include <atomic>
#include <iterator>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "codec/message_io.h"
#include "codec/messages/all.h"

// Live heap bytes and their peak since the last reset, counted by a header in
// front of every block (sized and unsized delete alike).
namespace {
constexpr size_t kHeader = 16;
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void reset_peak() { g_peak.store(g_live.load()); }
}  // namespace

void* operator new(size_t n) {
  auto* p = static_cast<unsigned char*>(std::malloc(n + kHeader));
  if (p == nullptr) throw std::bad_alloc();
  *reinterpret_cast<size_t*>(p) = n;
  int64_t now = g_live.fetch_add(static_cast<int64_t>(n)) + static_cast<int64_t>(n);
  int64_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
  return p + kHeader;
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* q) noexcept {
  if (q == nullptr) return;
  auto* p = static_cast<unsigned char*>(q) - kHeader;
  g_live.fetch_sub(static_cast<int64_t>(*reinterpret_cast<size_t*>(p)));
  std::free(p);
}
void operator delete[](void* q) noexcept { operator delete(q); }
void operator delete(void* q, size_t) noexcept { operator delete(q); }
void operator delete[](void* q, size_t) noexcept { operator delete(q); }

namespace epochgate::codec {
namespace {

using Buf = std::vector<uint8_t>;

// Produce v9 (flexible) up to the topic array's count.
void produce_v9_head(Writer& w, uint32_t topic_count) {
  w.uvarint(0);  // TransactionalId: null
  w.int16(1);    // Acks
  w.int32(30000);
  w.uvarint(topic_count + 1);  // TopicData: compact array
}

// The hostile body: `n` topics of 3 bytes each (empty name, no partitions,
// no tags), as many as a frame of 3n bytes allows.
Buf empty_topics_body(uint32_t n) {
  Buf b;
  Writer w(b);
  produce_v9_head(w, n);
  for (uint32_t i = 0; i < n; ++i) {
    w.uvarint(1);  // Name: ""
    w.uvarint(1);  // PartitionData: empty
    w.uvarint(0);  // tags
  }
  w.uvarint(0);
  return b;
}

// A realistic body: `topics` topics named "topic-NNNN..." with `parts`
// partitions each, every partition carrying a null record set.
Buf topics_body(uint32_t topics, uint32_t parts) {
  Buf b;
  Writer w(b);
  produce_v9_head(w, topics);
  for (uint32_t t = 0; t < topics; ++t) {
    w.string("topic-" + std::to_string(t) + "-with-a-longer-name", true);
    w.uvarint(parts + 1);
    for (uint32_t p = 0; p < parts; ++p) {
      w.int32(static_cast<int32_t>(p));
      w.uvarint(0);  // Records: null
      w.uvarint(0);
    }
    w.uvarint(0);
  }
  w.uvarint(0);
  return b;
}

struct Outcome {
  Status status;
  DecodeBounds bounds;
  int64_t peak_growth = 0;  ///< heap peak during the decode, above where it started
};

Outcome decode_measured(const Buf& body, uint64_t max_entries) {
  Outcome o;
  o.bounds.max_entries = max_entries;
  auto m = std::make_unique<ProduceRequest>();
  Bytes trailing;
  int64_t before = g_live.load();
  reset_peak();
  o.status = decode_body_allow_trailing(body.data(), body.size(), 9, *m, trailing, o.bounds);
  o.peak_growth = g_peak.load() - before;
  return o;
}

TEST(BoundedDecode, HostileTopicArrayPastTheCapFailsBeforeAllocating) {
  // 1,000,000 topics in 3 MB: 96 MB decoded if the count sized the vector.
  Buf body = empty_topics_body(1000000);
  Outcome o = decode_measured(body, 100000);
  EXPECT_EQ(o.status.code, Errc::kTooManyPartitions);
  EXPECT_STREQ(o.status.field, "TopicData");
  EXPECT_STREQ(errc_name(o.status.code), "too_many_partitions");
  EXPECT_LT(o.status.offset, 16u) << "refused at the count, not after decoding entries";
  EXPECT_LT(o.peak_growth, 64 * 1024) << "heap grew " << o.peak_growth << " bytes for a "
                                      << body.size() << "-byte frame";
}

TEST(BoundedDecode, CountTheBytesCannotBackReservesNoMoreThanTheFrame) {
  // The count promises 1,000,000 topics of 3 bytes; 100 real ones follow,
  // then bytes that do not decode (a name longer than the frame). No cap.
  Buf body = empty_topics_body(1000000);
  size_t bad = 10 + 3 * 100;  // past the 10-byte head and 100 topics
  const uint8_t too_long[] = {0xff, 0xff, 0xff, 0xff, 0x0f};  // uvarint 2^32-1
  std::copy(std::begin(too_long), std::end(too_long), body.begin() + static_cast<long>(bad));
  Outcome o = decode_measured(body, UINT64_MAX);
  EXPECT_EQ(o.status.code, Errc::kLengthOverflow);
  double ratio = static_cast<double>(o.peak_growth) / static_cast<double>(body.size());
  EXPECT_LT(ratio, 1.5) << "heap grew " << o.peak_growth << " bytes (" << ratio
                        << "x) for a " << body.size() << "-byte frame";
}

TEST(BoundedDecode, ValidHostileFrameUnderNoCapBuildsOnlyWhatDecodes) {
  // Every declared topic is really there: the decode builds them all (96
  // bytes each is the honest cost), and the charge says so.
  Buf body = empty_topics_body(20000);
  Outcome o = decode_measured(body, UINT64_MAX);
  ASSERT_TRUE(o.status.ok()) << o.status.message();
  EXPECT_EQ(o.bounds.entries, 20000u);
  const uint64_t built = 20000u * sizeof(ProduceRequest::TopicProduceData);
  EXPECT_GE(o.bounds.decoded_bytes, built);      // every entry charged
  EXPECT_LE(o.bounds.decoded_bytes, 2 * built);  // plus what vector growth left unused
  EXPECT_LE(o.peak_growth, static_cast<int64_t>(2 * o.bounds.decoded_bytes));
}

TEST(BoundedDecode, TopicsAndPartitionsCountAgainstTheCap) {
  Buf body = topics_body(2, 5);  // 2 topic entries + 10 partition entries
  Outcome at = decode_measured(body, 12);
  ASSERT_TRUE(at.status.ok()) << at.status.message();
  EXPECT_EQ(at.bounds.entries, 12u);
  Outcome over = decode_measured(body, 11);
  EXPECT_EQ(over.status.code, Errc::kTooManyPartitions);
  EXPECT_STREQ(over.status.field, "PartitionData");
}

TEST(BoundedDecode, UnknownTaggedFieldsCountAgainstTheCap) {
  Buf b;
  Writer w(b);
  produce_v9_head(w, 0);
  w.uvarint(300);  // 300 unknown tagged fields, empty payloads, tags 0..299
  for (uint32_t tag = 0; tag < 300; ++tag) {
    w.uvarint(tag);
    w.uvarint(0);
  }
  Outcome ok = decode_measured(b, 300);
  ASSERT_TRUE(ok.status.ok()) << ok.status.message();
  Outcome over = decode_measured(b, 299);
  EXPECT_EQ(over.status.code, Errc::kTooManyPartitions);
}

TEST(BoundedDecode, DecodedBytesMatchTheHeapTheRequestHolds) {
  // What the proxy charges to the buffer budget must be what the decoded
  // request really holds, measured here by the allocator.
  Buf body = topics_body(1000, 10);
  DecodeBounds bounds;
  int64_t before = g_live.load();
  auto m = std::make_unique<ProduceRequest>();
  int64_t top = g_live.load() - before;  // the message object itself: not charged
  Bytes trailing;
  Status s = decode_body_allow_trailing(body.data(), body.size(), 9, *m, trailing, bounds);
  ASSERT_TRUE(s.ok()) << s.message();
  int64_t held = g_live.load() - before - top;
  EXPECT_EQ(bounds.entries, 11000u);
  double ratio = static_cast<double>(bounds.decoded_bytes) / static_cast<double>(held);
  EXPECT_GT(ratio, 0.9) << bounds.decoded_bytes << " charged, " << held << " held";
  EXPECT_LT(ratio, 1.1) << bounds.decoded_bytes << " charged, " << held << " held";
}

}  // namespace
}  // namespace epochgate::codec
