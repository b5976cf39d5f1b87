// tests/codec/produce_stream_test.cc: the incremental Produce request reader
// (codec/produce_stream.h) over requests the generated codec encodes, every
// version, fed whole, byte by byte and in random chunks as a socket would
// deliver them, with record bytes passed around it (spliced) and lengths
// that overrun the frame.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "opaque_records.h"
#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/produce_request.h"
#include "codec/produce_stream.h"

namespace epochgate::proxy {
namespace {

using codec::ProduceRequest;
using Result = ProduceStreamParser::Result;

using test::records_of;

struct Built {
  std::vector<std::vector<uint8_t>> records;  // keeps record views alive
  std::vector<uint8_t> tag_bytes = {0xAB, 0xCD};
  std::vector<uint8_t> frame;                 // size prefix included
  size_t last_records = 0;                    // the last partition's records length
};

// A request of `topics` x `parts` partitions; the last partition's records
// are `last_bytes` long (0: null); tagged fields everywhere from v9.
Built build(int16_t version, size_t topics, size_t parts, size_t last_bytes,
            bool tags = true) {
  Built b;
  b.records.reserve(topics * parts);
  ProduceRequest m;
  if (version >= 3) m.transactional_id = std::string("txn-1");
  m.acks = -1;
  m.timeout_ms = 30000;
  uint32_t seed = 1;
  const codec::Bytes tag{b.tag_bytes.data(), static_cast<uint32_t>(b.tag_bytes.size())};
  for (size_t t = 0; t < topics; ++t) {
    ProduceRequest::TopicProduceData topic;
    topic.name = "topic-" + std::to_string(t);
    topic.topic_id[0] = static_cast<uint8_t>(t + 1);
    for (size_t p = 0; p < parts; ++p) {
      ProduceRequest::PartitionProduceData part;
      part.index = static_cast<int32_t>(p);
      const bool last = t + 1 == topics && p + 1 == parts;
      const size_t n = last ? last_bytes : 700 + p * 33;
      if (n > 0) {
        b.records.push_back(records_of(n, seed++));
        part.records = codec::Bytes{b.records.back().data(), static_cast<uint32_t>(n)};
      } else {
        part.records = codec::Bytes{nullptr, 0, true};
      }
      if (version >= 9 && tags) part.unknown_tagged_fields.push_back({7, tag});
      topic.partition_data.push_back(std::move(part));
    }
    if (version >= 9 && tags) topic.unknown_tagged_fields.push_back({5, tag});
    m.topic_data.push_back(std::move(topic));
  }
  if (version >= 9 && tags) m.unknown_tagged_fields.push_back({3, tag});
  codec::RequestHeader h;
  h.api_key = 0;
  h.api_version = version;
  h.correlation_id = 4242;
  h.client_id = "producer-1";
  h.header_version = version >= 9 ? 2 : 1;
  codec::encode_frame(b.frame, h, m, version);
  b.last_records = last_bytes;
  return b;
}

struct Fed {
  Result last = Result::kNeedMore;
  bool saw_last_records = false;
  size_t head = 0;
  size_t consumed = 0;
  std::vector<uint8_t> out;  // what was consumed, in order
};

// Feeds the payload in chunks of `chunk` (0: random 1..4096), as a relay
// would: every consumed byte forwarded, unconsumed bytes offered again.
Fed feed_all(ProduceStreamParser& p, const std::vector<uint8_t>& frame, size_t chunk,
             uint32_t seed = 7) {
  Fed f;
  std::mt19937 rnd(seed);
  std::vector<uint8_t> pending;
  size_t pos = 4;
  while (true) {
    size_t n = chunk ? chunk : 1 + rnd() % 4096;
    n = std::min(n, frame.size() - pos);
    pending.insert(pending.end(), frame.begin() + pos, frame.begin() + pos + n);
    pos += n;
    size_t used = 0;
    Result r = p.feed(pending.data(), pending.size(), used);
    f.out.insert(f.out.end(), pending.begin(), pending.begin() + used);
    pending.erase(pending.begin(), pending.begin() + used);
    f.consumed += used;
    if (r == Result::kLastRecords) {
      EXPECT_FALSE(f.saw_last_records) << "reported once";
      f.saw_last_records = true;
      f.head = p.head_size();
      continue;  // go on at once with what is pending
    }
    f.last = r;
    if (r != Result::kNeedMore || pos == frame.size()) {
      if (r == Result::kNeedMore && !pending.empty()) continue;
      break;
    }
  }
  return f;
}

class EveryVersion : public ::testing::TestWithParam<int16_t> {};

TEST_P(EveryVersion, OnePartitionReachesItsRecordsAndEndsOnTheLastByte) {
  const int16_t v = GetParam();
  Built b = build(v, 1, 1, 70000);
  for (size_t chunk : {size_t{0}, size_t{1}, b.frame.size()}) {
    ProduceStreamParser p(v, b.frame.size() - 4);
    Fed f = feed_all(p, b.frame, chunk);
    ASSERT_EQ(f.last, Result::kDone) << "v" << v << " chunk " << chunk << ": " << p.error_detail();
    EXPECT_TRUE(f.saw_last_records);
    EXPECT_EQ(f.consumed, b.frame.size() - 4);
    EXPECT_EQ(f.out, std::vector<uint8_t>(b.frame.begin() + 4, b.frame.end())) << "bytes unchanged";
    EXPECT_EQ(p.last_records_size(), 70000u);
    EXPECT_EQ(p.head_size() + p.last_records_size() + p.trailing_size(), b.frame.size() - 4);
    // Tagged sections (v9+): one partition's, one topic's, the top level's,
    // each a count, a tag, a size and two bytes.
    EXPECT_EQ(p.trailing_size(), v >= 9 ? 3u * 5u : 0u);
    EXPECT_EQ(p.left(), 0u);
  }
}

TEST_P(EveryVersion, SeveralTopicsAndPartitionsStopAtTheLastOnly) {
  const int16_t v = GetParam();
  Built b = build(v, 3, 4, 90000);
  ProduceStreamParser p(v, b.frame.size() - 4);
  size_t used = 0;
  // Whole frame at once: the parser stops before the last records.
  ASSERT_EQ(p.feed(b.frame.data() + 4, b.frame.size() - 4, used), Result::kLastRecords);
  EXPECT_EQ(used, p.head_size());
  EXPECT_TRUE(p.in_last_partition());
  EXPECT_EQ(p.records_left(), 90000u);
  EXPECT_EQ(b.frame.size() - 4 - p.head_size() - p.trailing_size(), 90000u);
  // The length field sits right before the records: int32, or a 3-byte
  // uvarint for 90001.
  EXPECT_EQ(p.head_size() - p.records_length_offset(), v >= 9 ? 3u : 4u);
  size_t more = 0;
  ASSERT_EQ(p.feed(b.frame.data() + 4 + used, b.frame.size() - 4 - used, more), Result::kDone);
  EXPECT_EQ(used + more, b.frame.size() - 4);
}

TEST_P(EveryVersion, RecordsPassedAroundTheParserAsASpliceMovesThem) {
  const int16_t v = GetParam();
  Built b = build(v, 2, 2, 300000);
  ProduceStreamParser p(v, b.frame.size() - 4);
  size_t used = 0;
  // The head and the first 1000 record bytes arrive; the rest is spliced.
  const size_t first = 1000;
  ASSERT_EQ(p.feed(b.frame.data() + 4, b.frame.size() - 4, used), Result::kLastRecords);
  const size_t head = used;
  ASSERT_EQ(p.feed(b.frame.data() + 4 + head, first, used), Result::kNeedMore);
  EXPECT_EQ(used, first);
  size_t spliced = 0;
  while (p.records_left() > 0) {
    size_t n = std::min<uint64_t>(p.records_left(), 65536 + 17);
    p.pass_records(n);
    spliced += n;
  }
  EXPECT_EQ(spliced, 300000 - first);
  const size_t at = head + first + spliced;
  if (v >= 9) {
    ASSERT_EQ(p.left(), b.frame.size() - 4 - at);
    ASSERT_EQ(p.feed(b.frame.data() + 4 + at, b.frame.size() - 4 - at, used), Result::kDone);
    EXPECT_EQ(used, p.trailing_size());
  } else {
    // Nothing follows the last records: an empty feed ends it.
    EXPECT_EQ(p.left(), 0u);
    EXPECT_EQ(p.feed(nullptr, 0, used), Result::kDone);
  }
}

TEST_P(EveryVersion, SeveralBatchesInTheLastPartitionAreOneOpaqueRun) {
  const int16_t v = GetParam();
  // Two 61-byte-headed batches back to back are still one records field.
  Built b = build(v, 1, 2, 2 * 61 + 2 * 40000);
  ProduceStreamParser p(v, b.frame.size() - 4);
  Fed f = feed_all(p, b.frame, 0, 99);
  ASSERT_EQ(f.last, Result::kDone);
  EXPECT_EQ(p.last_records_size(), 2u * 61 + 2 * 40000);
}

TEST_P(EveryVersion, ALastPartitionWithoutRecordsNeverStops) {
  const int16_t v = GetParam();
  Built b = build(v, 2, 2, 0);
  ProduceStreamParser p(v, b.frame.size() - 4);
  Fed f = feed_all(p, b.frame, 3);
  EXPECT_EQ(f.last, Result::kDone);
  EXPECT_FALSE(f.saw_last_records);
}

TEST_P(EveryVersion, RecordsLengthOverrunningTheFrameIsMalformed) {
  const int16_t v = GetParam();
  Built b = build(v, 1, 1, 70000, false);
  // The frame claims 1000 bytes less than its last records need.
  const size_t payload = b.frame.size() - 4 - 1000;
  ProduceStreamParser p(v, payload);
  size_t used = 0;
  EXPECT_EQ(p.feed(b.frame.data() + 4, payload, used), Result::kError);
  EXPECT_EQ(p.error().code, codec::Errc::kLengthOverflow);
}

TEST_P(EveryVersion, AFrameEndingInsideTheHeadIsTruncated) {
  const int16_t v = GetParam();
  Built b = build(v, 1, 1, 70000);
  ProduceStreamParser p(v, 20);  // inside the client id or the body
  size_t used = 0;
  EXPECT_EQ(p.feed(b.frame.data() + 4, 20, used), Result::kError);
  EXPECT_EQ(p.error().code, codec::Errc::kTruncated);
}

INSTANTIATE_TEST_SUITE_P(ProduceVersions, EveryVersion, ::testing::Range<int16_t>(0, 14),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

TEST(ProduceStreamParser, CountsNoPayloadCouldHoldAreMalformedAtOnce) {
  Built b = build(3, 1, 1, 70000, false);
  // TopicData count (after txn id "txn-1", acks, timeout) set to 2^30.
  std::vector<uint8_t> f = b.frame;
  codec::RequestHeader h;
  ASSERT_TRUE(codec::parse_request_header(f.data() + 4, f.size() - 4, h).ok());
  const size_t count_at = 4 + h.size + 2 + 5 + 2 + 4;
  f[count_at] = 0x40;
  ProduceStreamParser p(3, f.size() - 4);
  size_t used = 0;
  EXPECT_EQ(p.feed(f.data() + 4, f.size() - 4, used), Result::kError);
  EXPECT_EQ(p.error().code, codec::Errc::kLengthOverflow);
}

TEST(ProduceStreamParser, BadTaggedFieldsAfterTheRecordsAreMalformed) {
  Built b = build(9, 1, 1, 70000);
  std::vector<uint8_t> f = b.frame;
  // The partition's tagged section: count 1, tag 7, size 2: make the size overrun.
  const size_t tags_at = f.size() - 15;
  ASSERT_EQ(f[tags_at], 1);
  ASSERT_EQ(f[tags_at + 1], 7);
  f[tags_at + 2] = 100;
  ProduceStreamParser p(9, f.size() - 4);
  Fed fed = feed_all(p, f, 0);
  EXPECT_EQ(fed.last, Result::kError);
}

}  // namespace
}  // namespace epochgate::proxy
