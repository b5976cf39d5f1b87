// tests/codec/produce_head_test.cc: codec::ProduceHead, the in-place walk of
// a Produce request, against the full decode it stands in for: on the
// sample and golden requests every field the decision reads is the
// decode's, and on every truncation, byte edit and entry cap of them the
// walk fails exactly where and how the decode fails.
#include "codec/produce_head.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/all.h"
#include "codec/messages/test_samples.h"
#include "codec/writer.h"

namespace epochgate::codec {
namespace {

struct Body {
  std::string what;
  int16_t version = 0;
  std::vector<uint8_t> bytes;
};

std::vector<uint8_t> encoded(const ProduceRequest& m, int16_t version) {
  std::vector<uint8_t> out;
  Writer w(out);
  m.encode(w, version);
  return out;
}

// Three topics of two partitions (one with null records), a transactional
// id, and unknown tagged fields at every level where the version has them.
ProduceRequest many_topics(int16_t version) {
  ProduceRequest m;
  m.transactional_id = "txn-1";
  m.acks = 1;
  m.timeout_ms = 30000;
  static const uint8_t kRecords[] = {1, 2, 3, 4, 5};
  static const uint8_t kTag[] = {9, 9};
  for (int t = 0; t < 3; ++t) {
    auto& topic = m.topic_data.emplace_back();
    if (version <= 12) topic.name = "topic-with-a-longer-name-" + std::to_string(t);
    if (version >= 13) topic.topic_id[15] = static_cast<uint8_t>(t + 1);
    for (int p = 0; p < 2; ++p) {
      auto& part = topic.partition_data.emplace_back();
      part.index = 7 * t + p;
      part.records = p == 0 ? Bytes{kRecords, sizeof kRecords, false} : Bytes::null();
      if (ProduceRequest::is_flexible(version))
        part.unknown_tagged_fields.push_back(TaggedField{3, Bytes{kTag, sizeof kTag, false}});
    }
    if (ProduceRequest::is_flexible(version))
      topic.unknown_tagged_fields.push_back(TaggedField{5, Bytes{kTag, 1, false}});
  }
  if (ProduceRequest::is_flexible(version))
    m.unknown_tagged_fields.push_back(TaggedField{1, Bytes{kTag, 2, false}});
  return m;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Sample requests of every version, the many-topic ones, and the captured
// requests of three clients (golden/manifest.txt), as bodies.
std::vector<Body> corpus() {
  std::vector<Body> out;
  for (int16_t v = ProduceRequest::kMinVersion; v <= ProduceRequest::kMaxVersion; ++v) {
    ProduceRequest sample;
    testing::fill_sample(sample, v);
    out.push_back({"sample v" + std::to_string(v), v, encoded(sample, v)});
    out.push_back({"many topics v" + std::to_string(v), v, encoded(many_topics(v), v)});
  }
  for (const char* file : {"kafka-python-2.0.2/req_Produce_v7_0.bin",
                           "kcat-1.7.1-librdkafka-2.0.2/req_Produce_v7_0.bin",
                           "librdkafka-2.15.1/req_Produce_v10_0.bin"}) {
    std::vector<uint8_t> f = read_file(std::string(EPOCHGATE_GOLDEN_DIR) + "/" + file);
    EXPECT_GT(f.size(), 4u) << file;
    if (f.size() <= 4) continue;
    RequestHeader h;
    EXPECT_TRUE(parse_request_header(f.data() + 4, f.size() - 4, h).ok()) << file;
    out.push_back({file, h.api_version,
                   std::vector<uint8_t>(f.begin() + 4 + static_cast<std::ptrdiff_t>(h.size),
                                        f.end())});
  }
  return out;
}

// Reads `body` both ways under the same cap and compares what the decision
// reads; returns the walk's status.
Status expect_same(const std::string& what, const std::vector<uint8_t>& body, size_t len,
                   int16_t version, uint64_t max_entries) {
  ProduceRequest full;
  Bytes trailing;
  DecodeBounds full_bounds;
  full_bounds.max_entries = max_entries;
  const Status want =
      decode_body_allow_trailing(body.data(), len, version, full, trailing, full_bounds);
  ProduceHead head;
  DecodeBounds head_bounds;
  head_bounds.max_entries = max_entries;
  const Status got = head.read(body.data(), len, version, head_bounds);
  const std::string where = what + ", " + std::to_string(len) + " bytes, cap " +
                            std::to_string(max_entries);
  EXPECT_EQ(got.code, want.code) << where;
  EXPECT_EQ(got.offset, want.offset) << where;
  EXPECT_STREQ(got.field, want.field) << where;
  EXPECT_EQ(head_bounds.entries, full_bounds.entries) << where;
  if (!got.ok() || !want.ok()) return got;
  EXPECT_EQ(head.acks, full.acks) << where;
  EXPECT_EQ(PartitionShape<ProduceHead>::acks_zero(head),
            PartitionShape<ProduceRequest>::acks_zero(full)) << where;
  EXPECT_EQ(head.topics.size(), full.topic_data.size()) << where;
  for (size_t t = 0; t < head.topics.size() && t < full.topic_data.size(); ++t) {
    const auto& ht = head.topics[t];
    const auto& ft = full.topic_data[t];
    EXPECT_EQ(ht.name, ft.name) << where << ", topic " << t;
    EXPECT_EQ(ht.topic_id, ft.topic_id) << where << ", topic " << t;
    EXPECT_EQ(ht.partitions.size(), ft.partition_data.size()) << where << ", topic " << t;
    for (size_t p = 0; p < ht.partitions.size() && p < ft.partition_data.size(); ++p)
      EXPECT_EQ(ht.partitions[p].index, ft.partition_data[p].index) << where;
  }
  return got;
}

TEST(ProduceHead, ReadsWhatTheDecodeReadsOnEveryCorpusRequest) {
  const auto bodies = corpus();
  ASSERT_EQ(bodies.size(), 2u * 14u + 3u);
  for (const auto& b : bodies)
    EXPECT_TRUE(expect_same(b.what, b.bytes, b.bytes.size(), b.version, UINT64_MAX).ok())
        << b.what;
}

TEST(ProduceHead, NamesAreViewsIntoTheBody) {
  const auto body = encoded(many_topics(9), 9);
  ProduceHead head;
  DecodeBounds bounds;
  ASSERT_TRUE(head.read(body.data(), body.size(), 9, bounds).ok());
  ASSERT_EQ(head.topics.size(), 3u);
  const auto* begin = reinterpret_cast<const char*>(body.data());
  EXPECT_GE(head.topics[2].name.data(), begin);
  EXPECT_LE(head.topics[2].name.data() + head.topics[2].name.size(), begin + body.size());
  EXPECT_EQ(head.topics[2].name, "topic-with-a-longer-name-2");
  ASSERT_EQ(head.topics[2].partitions.size(), 2u);
  EXPECT_EQ(head.topics[2].partitions[1].index, 15);
  EXPECT_EQ(bounds.entries, 3u + 6u + 6u + 3u + 1u);  // topics, partitions, tagged fields
}

TEST(ProduceHead, FailsWhereTheDecodeFailsOnEveryTruncation) {
  for (const auto& b : corpus())
    for (size_t len = 0; len < b.bytes.size(); ++len)
      expect_same(b.what, b.bytes, len, b.version, UINT64_MAX);
}

TEST(ProduceHead, FailsWhereTheDecodeFailsOnEveryByteEdit) {
  for (const auto& b : corpus()) {
    for (size_t at = 0; at < b.bytes.size(); ++at) {
      for (uint8_t value : {uint8_t{0x00}, uint8_t{0x01}, uint8_t{0x7f}, uint8_t{0x80},
                            uint8_t{0xff}}) {
        std::vector<uint8_t> edited = b.bytes;
        if (edited[at] == value) continue;
        edited[at] = value;
        expect_same(b.what + " @" + std::to_string(at) + "=" + std::to_string(value), edited,
                    edited.size(), b.version, UINT64_MAX);
      }
    }
  }
}

TEST(ProduceHead, RefusesPastTheEntryCapAsTheDecodeDoes) {
  for (const auto& b : corpus()) {
    DecodeBounds all;
    ProduceHead head;
    ASSERT_TRUE(head.read(b.bytes.data(), b.bytes.size(), b.version, all).ok()) << b.what;
    for (uint64_t cap = 0; cap <= all.entries; ++cap) {
      const Status s = expect_same(b.what, b.bytes, b.bytes.size(), b.version, cap);
      EXPECT_EQ(s.ok(), cap >= all.entries) << b.what << ", cap " << cap;
      if (!s.ok()) {
        EXPECT_EQ(s.code, Errc::kTooManyPartitions) << b.what << ", cap " << cap;
      }
    }
  }
}

TEST(ProduceHead, RefusesVersionsTheDecodeRefuses) {
  const std::vector<uint8_t> empty;
  for (int16_t v : {int16_t{-1}, int16_t{14}}) {
    const Status s = expect_same("no body", empty, 0, v, UINT64_MAX);
    EXPECT_EQ(s.code, Errc::kUnsupportedVersion);
  }
}

TEST(ProduceHead, HostileCountsAreRefusedBeforeAnythingIsBuilt) {
  // Produce v9: TopicData count 2^32-2 in a 9-byte body.
  std::vector<uint8_t> body;
  Writer w(body);
  w.uvarint(0);  // TransactionalId null
  w.int16(-1);
  w.int32(1000);
  w.uvarint(0xffffffffu);
  ProduceHead head;
  DecodeBounds bounds;
  EXPECT_EQ(expect_same("huge count", body, body.size(), 9, UINT64_MAX).code,
            Errc::kLengthOverflow);
  EXPECT_FALSE(head.read(body.data(), body.size(), 9, bounds).ok());
  EXPECT_EQ(head.topics.capacity(), 0u);
}

TEST(ProduceHead, ReadsAgainIntoTheSameObject) {
  ProduceHead head;
  DecodeBounds bounds;
  const auto big = encoded(many_topics(12), 12);
  ASSERT_TRUE(head.read(big.data(), big.size(), 12, bounds).ok());
  ProduceRequest one;
  testing::fill_sample(one, 13);
  const auto small = encoded(one, 13);
  ASSERT_TRUE(head.read(small.data(), small.size(), 13, bounds).ok());
  ASSERT_EQ(head.topics.size(), one.topic_data.size());
  EXPECT_TRUE(head.topics[0].name.empty());
  EXPECT_EQ(head.topics[0].topic_id, one.topic_data[0].topic_id);
  EXPECT_EQ(head.acks, one.acks);
}

TEST(ProduceHead, TrimGivesBackRoomPastTheKeptEntries) {
  ProduceHead head;
  head.topics.reserve(ProduceHead::kKeptEntries + 1);
  head.all_partitions.reserve(8);
  head.trim();
  EXPECT_EQ(head.topics.capacity(), 0u);
  EXPECT_EQ(head.all_partitions.capacity(), 8u);
}

}  // namespace
}  // namespace epochgate::codec
