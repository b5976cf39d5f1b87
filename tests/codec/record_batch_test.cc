// tests/codec/record_batch_test.cc: the RecordBatch v2 header reader
// (codec/record_batch.h) over the first Produce request of independent
// producers (librdkafka 2.15.1 and 2.0.2 idempotent, transactional, plain and
// lz4; kafka-python 2.0.2 with v2 batches and with magic 1 message sets;
// golden/record_batches, captured by tools/capture/capture_batches.py), whose
// producer id and epoch are the ones the broker handed out in InitProducerId,
// and over hostile edits of those bytes. Field offsets here are written out
// by hand from Kafka's DefaultRecordBatch layout, never taken from the code
// under test.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "codec/message_io.h"
#include "codec/messages/all.h"
#include "codec/record_batch.h"

#ifndef EPOCHGATE_BATCHES_DIR
#error "EPOCHGATE_BATCHES_DIR must point at tests/codec/golden/record_batches"
#endif

namespace epochgate::codec {
namespace {

struct Captured {
  std::string file;
  int16_t version = 0;
  std::string source;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t record_count = 0;
  bool transactional = false;
};

void PrintTo(const Captured& c, std::ostream* os) { *os << c.file; }

std::vector<Captured> load_manifest() {
  std::vector<Captured> out;
  std::ifstream in(std::string(EPOCHGATE_BATCHES_DIR) + "/manifest.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    Captured c;
    int txn = 0;
    ls >> c.file >> c.version >> c.source >> c.producer_id >> c.producer_epoch >>
        c.record_count >> txn;
    c.transactional = txn != 0;
    out.push_back(c);
  }
  return out;
}

std::vector<uint8_t> read_file(const std::string& name) {
  std::ifstream in(std::string(EPOCHGATE_BATCHES_DIR) + "/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The records bytes of the first partition of a whole Produce frame, copied
// out (the hostile tests edit them).
std::vector<uint8_t> first_records(const std::vector<uint8_t>& frame, int16_t version,
                                   ProduceRequest* body = nullptr) {
  RequestHeader h;
  EXPECT_TRUE(parse_request_header(frame.data() + 4, frame.size() - 4, h).ok());
  ProduceRequest m;
  EXPECT_TRUE(decode_body(frame.data() + 4 + h.size, frame.size() - 4 - h.size, version, m).ok());
  if (body) *body = m;
  if (m.topic_data.empty() || m.topic_data[0].partition_data.empty()) return {};
  const Bytes& r = m.topic_data[0].partition_data[0].records;
  return {r.data, r.data + r.size};
}

void put_be32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

class CapturedBatch : public ::testing::TestWithParam<Captured> {};

TEST_P(CapturedBatch, HeaderCarriesWhatTheProducerAndBrokerAgreedOn) {
  const Captured& c = GetParam();
  std::vector<uint8_t> frame = read_file(c.file);
  ASSERT_GT(frame.size(), 4u) << c.file;
  ProduceRequest body;
  std::vector<uint8_t> records = first_records(frame, c.version, &body);
  ASSERT_FALSE(records.empty());
  RecordBatchInfo info = read_record_batch_header(records.data(), records.size());
  if (c.version < 3) {
    // A magic 1 message set: refused as pre-KIP-98, with the magic seen.
    EXPECT_EQ(info.error, RecordBatchError::kOldMagic);
    EXPECT_EQ(info.magic, 1);
    return;
  }
  ASSERT_TRUE(info.ok()) << record_batch_error_name(info.error) << " at " << info.error_offset;
  EXPECT_EQ(info.batch_count, 1u);
  EXPECT_EQ(info.first.magic, 2);
  EXPECT_EQ(info.first.size(), records.size());
  EXPECT_EQ(info.first.producer_id, c.producer_id);
  EXPECT_EQ(info.first.producer_epoch, c.producer_epoch);
  EXPECT_EQ(info.first.record_count, c.record_count);
  EXPECT_EQ(info.first.transactional(), c.transactional);
  EXPECT_EQ(body.transactional_id.has_value(), c.transactional);
  EXPECT_FALSE(info.first.control());
  EXPECT_EQ(info.first.idempotent(), c.producer_id >= 0);
  if (c.producer_id >= 0) {
    // The first batch of a fresh producer id starts at sequence 0.
    EXPECT_EQ(info.first.base_sequence, 0);
    EXPECT_EQ(info.first.last_sequence(), c.record_count - 1);
  } else {
    EXPECT_EQ(info.first.base_sequence, -1);
  }
  EXPECT_LE(info.first.base_timestamp, info.first.max_timestamp);
  if (c.source.find("lz4") != std::string::npos) {
    EXPECT_EQ(info.first.attributes & 0x07, 3);  // lz4, and the header still reads
  }
}

TEST_P(CapturedBatch, EveryShorterPrefixIsAnErrorNeverOk) {
  const Captured& c = GetParam();
  std::vector<uint8_t> records = first_records(read_file(c.file), c.version);
  for (size_t n = 0; n < records.size(); ++n) {
    // A fresh copy of exactly n bytes, so a read past it is an ASan error.
    std::vector<uint8_t> prefix(records.begin(), records.begin() + n);
    RecordBatchInfo info = read_record_batch_header(prefix.data(), prefix.size());
    ASSERT_FALSE(info.ok()) << n;
    if (c.version >= 3) {
      ASSERT_EQ(info.error, RecordBatchError::kTruncated) << n;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Captured>& i) {
  std::string s = i.param.source;
  for (char& ch : s) {
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Captured, CapturedBatch, ::testing::ValuesIn(load_manifest()), case_name);

TEST(CapturedBatches, ManifestHasEveryKindOfProducer) {
  int idempotent = 0, transactional = 0, plain = 0, old_magic = 0;
  for (const Captured& c : load_manifest()) {
    if (c.version < 3) ++old_magic;
    else if (c.transactional) ++transactional;
    else if (c.producer_id >= 0) ++idempotent;
    else ++plain;
  }
  EXPECT_GE(idempotent, 2);
  EXPECT_GE(transactional, 2);
  EXPECT_GE(plain, 2);
  EXPECT_GE(old_magic, 1);
}

// The librdkafka 2.15.1 idempotent batch, for editing.
std::vector<uint8_t> real_batch() {
  for (const Captured& c : load_manifest()) {
    if (c.source == "librdkafka-2.15.1-idempotent") {
      return first_records(read_file(c.file), c.version);
    }
  }
  ADD_FAILURE() << "no librdkafka-2.15.1-idempotent capture";
  return {};
}

RecordBatchInfo read(const std::vector<uint8_t>& b) {
  return read_record_batch_header(b.data(), b.size());
}

TEST(HostileBatch, NullAndEmptyRecords) {
  EXPECT_EQ(read_record_batch_header(Bytes::null()).error, RecordBatchError::kNullRecords);
  EXPECT_EQ(read_record_batch_header(nullptr, 0).error, RecordBatchError::kTruncated);
}

TEST(HostileBatch, MagicOtherThanTwo) {
  std::vector<uint8_t> b = real_batch();
  ASSERT_GE(b.size(), 61u);
  b[16] = 0;  // magic
  EXPECT_EQ(read(b).error, RecordBatchError::kOldMagic);
  b[16] = 3;
  EXPECT_EQ(read(b).error, RecordBatchError::kUnknownMagic);
  b[16] = 0xff;
  EXPECT_EQ(read(b).error, RecordBatchError::kUnknownMagic);
  EXPECT_EQ(read(b).error_offset, 16u);
}

TEST(HostileBatch, BatchLengthShorterThanTheHeaderOrLongerThanTheBytes) {
  std::vector<uint8_t> b = real_batch();
  put_be32(b, 8, 48);  // batchLength: one byte short of the v2 header after it
  EXPECT_EQ(read(b).error, RecordBatchError::kBadLength);
  put_be32(b, 8, 0x80000000u);  // negative
  EXPECT_EQ(read(b).error, RecordBatchError::kBadLength);
  put_be32(b, 8, static_cast<uint32_t>(b.size() - 12 + 1));
  EXPECT_EQ(read(b).error, RecordBatchError::kTruncated);
  put_be32(b, 8, 0x7fffffffu);
  EXPECT_EQ(read(b).error, RecordBatchError::kTruncated);
}

TEST(HostileBatch, RecordCountMustMatchTheOffsetRange) {
  std::vector<uint8_t> b = real_batch();
  const RecordBatchInfo good = read(b);
  ASSERT_TRUE(good.ok());
  put_be32(b, 57, 0);  // records count
  EXPECT_EQ(read(b).error, RecordBatchError::kBadRecordCount);
  put_be32(b, 57, 0xffffffffu);
  EXPECT_EQ(read(b).error, RecordBatchError::kBadRecordCount);
  put_be32(b, 57, static_cast<uint32_t>(good.first.record_count + 1));
  EXPECT_EQ(read(b).error, RecordBatchError::kBadRecordCount);
  // Both moved together stay consistent: accepted.
  put_be32(b, 23, static_cast<uint32_t>(good.first.record_count));  // lastOffsetDelta
  EXPECT_TRUE(read(b).ok());
  put_be32(b, 23, 0xffffffffu);
  put_be32(b, 57, 0);
  EXPECT_EQ(read(b).error, RecordBatchError::kBadRecordCount);
}

TEST(HostileBatch, BytesAfterTheBatch) {
  std::vector<uint8_t> one = real_batch();
  std::vector<uint8_t> b = one;
  b.push_back(0);
  EXPECT_EQ(read(b).error, RecordBatchError::kPartialBatch);
  EXPECT_EQ(read(b).error_offset, one.size());
  // Two whole batches: read, and counted (Produce v3+ allows one; the caller decides).
  b = one;
  b.insert(b.end(), one.begin(), one.end());
  RecordBatchInfo two = read(b);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two.batch_count, 2u);
  // A second batch cut short, or one in magic 1.
  b.pop_back();
  EXPECT_EQ(read(b).error, RecordBatchError::kPartialBatch);
  b = one;
  b.insert(b.end(), one.begin(), one.end());
  b[one.size() + 16] = 1;
  EXPECT_EQ(read(b).error, RecordBatchError::kPartialBatch);
}

TEST(HostileBatch, FlagsAndIdsReadFromTheirOwnBytes) {
  std::vector<uint8_t> b = real_batch();
  b[21] = 0x00;
  b[22] = 0x30;  // attributes: transactional and control
  for (int i = 0; i < 8; ++i) b[43 + i] = static_cast<uint8_t>(0x01 + i);  // producerId
  b[51] = 0x7f;
  b[52] = 0xfe;  // producerEpoch
  put_be32(b, 53, 0x12345678u);  // baseSequence
  RecordBatchInfo info = read(b);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info.first.transactional());
  EXPECT_TRUE(info.first.control());
  EXPECT_EQ(info.first.producer_id, 0x0102030405060708LL);
  EXPECT_EQ(info.first.producer_epoch, 0x7ffe);
  EXPECT_EQ(info.first.base_sequence, 0x12345678);
  b[22] = 0x10;
  EXPECT_FALSE(read(b).first.control());
  EXPECT_TRUE(read(b).first.transactional());
  b[22] = 0x20;
  EXPECT_FALSE(read(b).first.transactional());
}

TEST(BatchSequence, LastSequenceWrapsLikeKafka) {
  RecordBatchHeader h;
  h.base_sequence = 10;
  h.last_offset_delta = 4;
  EXPECT_EQ(h.last_sequence(), 14);
  h.base_sequence = INT_MAX - 1;
  h.last_offset_delta = 1;
  EXPECT_EQ(h.last_sequence(), INT_MAX);
  h.last_offset_delta = 3;  // INT_MAX-1, INT_MAX, 0, 1
  EXPECT_EQ(h.last_sequence(), 1);
}

}  // namespace
}  // namespace epochgate::codec
