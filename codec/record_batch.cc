// codec/record_batch.cc: the RecordBatch v2 header reader (see record_batch.h).
#include "codec/record_batch.h"

#include <limits>
#include <type_traits>

namespace epochgate::codec {

namespace {

template <typename T>
T load_be(const uint8_t* p) {
  using U = std::make_unsigned_t<T>;
  U v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<U>((v << 8) | p[i]);
  return static_cast<T>(v);
}

RecordBatchInfo failed(RecordBatchInfo info, RecordBatchError e, size_t offset) {
  info.error = e;
  info.error_offset = static_cast<uint32_t>(offset);
  return info;
}

// Bytes a v2 batch has after its batchLength field at the least.
constexpr int32_t kMinBatchLength =
    static_cast<int32_t>(kRecordBatchHeaderSize - kBatchLogOverhead);

}  // namespace

const char* record_batch_error_name(RecordBatchError e) {
  switch (e) {
    case RecordBatchError::kOk: return "ok";
    case RecordBatchError::kNullRecords: return "null_records";
    case RecordBatchError::kTruncated: return "truncated";
    case RecordBatchError::kOldMagic: return "old_magic";
    case RecordBatchError::kUnknownMagic: return "unknown_magic";
    case RecordBatchError::kBadLength: return "bad_length";
    case RecordBatchError::kBadRecordCount: return "bad_record_count";
    case RecordBatchError::kPartialBatch: return "partial_batch";
  }
  return "unknown";
}

int32_t RecordBatchHeader::last_sequence() const {
  // Kafka's DefaultRecordBatch.incrementSequence: sequences wrap to 0 after
  // INT32_MAX rather than going negative.
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  if (base_sequence > kMax - last_offset_delta) {
    return last_offset_delta - (kMax - base_sequence) - 1;
  }
  return base_sequence + last_offset_delta;
}

RecordBatchInfo read_record_batch_header(const uint8_t* data, size_t size) {
  RecordBatchInfo info;
  if (size <= kBatchMagic) return failed(info, RecordBatchError::kTruncated, size);
  info.magic = static_cast<int8_t>(data[kBatchMagic]);
  if (info.magic == 0 || info.magic == 1) {
    return failed(info, RecordBatchError::kOldMagic, kBatchMagic);
  }
  if (info.magic != 2) return failed(info, RecordBatchError::kUnknownMagic, kBatchMagic);
  if (size < kRecordBatchHeaderSize) return failed(info, RecordBatchError::kTruncated, size);

  RecordBatchHeader& h = info.first;
  h.base_offset = load_be<int64_t>(data + kBatchBaseOffset);
  h.batch_length = load_be<int32_t>(data + kBatchLength);
  if (h.batch_length < kMinBatchLength) {
    return failed(info, RecordBatchError::kBadLength, kBatchLength);
  }
  if (h.size() > size) return failed(info, RecordBatchError::kTruncated, size);
  h.partition_leader_epoch = load_be<int32_t>(data + kBatchPartitionLeaderEpoch);
  h.magic = info.magic;
  h.crc = load_be<uint32_t>(data + kBatchCrc);
  h.attributes = load_be<int16_t>(data + kBatchAttributes);
  h.last_offset_delta = load_be<int32_t>(data + kBatchLastOffsetDelta);
  h.base_timestamp = load_be<int64_t>(data + kBatchBaseTimestamp);
  h.max_timestamp = load_be<int64_t>(data + kBatchMaxTimestamp);
  h.producer_id = load_be<int64_t>(data + kBatchProducerId);
  h.producer_epoch = load_be<int16_t>(data + kBatchProducerEpoch);
  h.base_sequence = load_be<int32_t>(data + kBatchBaseSequence);
  h.record_count = load_be<int32_t>(data + kBatchRecordCount);
  // The leader refuses a batch whose count disagrees with its offset range
  // (INVALID_RECORD); a sequence range derived from such a header is wrong.
  if (h.record_count <= 0 || h.last_offset_delta < 0 ||
      static_cast<int64_t>(h.last_offset_delta) + 1 != h.record_count) {
    return failed(info, RecordBatchError::kBadRecordCount, kBatchRecordCount);
  }

  // Count the batches after the first from their lengths; each must be whole.
  uint64_t at = h.size();
  info.batch_count = 1;
  while (at < size) {
    const size_t left = size - static_cast<size_t>(at);
    if (left < kRecordBatchHeaderSize) return failed(info, RecordBatchError::kPartialBatch, at);
    const uint8_t* b = data + at;
    const int32_t len = load_be<int32_t>(b + kBatchLength);
    if (static_cast<int8_t>(b[kBatchMagic]) != 2 || len < kMinBatchLength ||
        kBatchLogOverhead + static_cast<uint64_t>(len) > left) {
      return failed(info, RecordBatchError::kPartialBatch, at);
    }
    at += kBatchLogOverhead + static_cast<uint64_t>(len);
    ++info.batch_count;
  }
  return info;
}

}  // namespace epochgate::codec
