// codec/record_batch.h: reads the fixed header of a Kafka RecordBatch (magic 2,
// KIP-98) inside the opaque `records` bytes of a Produce partition, so that
// rerouting can know a batch's producer id, producer epoch, sequence range and
// transactional flag. A pure function over a byte view.
// Must never: copy, decompress or re-encode record data, read past the view,
// or accept a batch Kafka's broker would reject for its header shape.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/types.h"

namespace epochgate::codec {

/// Byte offsets of the RecordBatch v2 header fields (Kafka's DefaultRecordBatch
/// layout; all big-endian). The records start at kRecordBatchHeaderSize.
enum RecordBatchOffset : uint32_t {
  kBatchBaseOffset = 0,             ///< int64
  kBatchLength = 8,                 ///< int32: bytes after this field
  kBatchPartitionLeaderEpoch = 12,  ///< int32
  kBatchMagic = 16,                 ///< int8 (same place in magic 0 and 1 messages)
  kBatchCrc = 17,                   ///< uint32, CRC-32C of attributes..end
  kBatchAttributes = 21,            ///< int16
  kBatchLastOffsetDelta = 23,       ///< int32
  kBatchBaseTimestamp = 27,         ///< int64
  kBatchMaxTimestamp = 35,          ///< int64
  kBatchProducerId = 43,            ///< int64, -1 when not idempotent
  kBatchProducerEpoch = 51,         ///< int16
  kBatchBaseSequence = 53,          ///< int32, -1 when not idempotent
  kBatchRecordCount = 57,           ///< int32
  kRecordBatchHeaderSize = 61,
};

/// Bytes a batch takes before `batchLength` starts counting (baseOffset and
/// batchLength itself): a whole batch is kBatchLogOverhead + batchLength.
inline constexpr uint32_t kBatchLogOverhead = 12;

/// Attribute bits of a magic 2 batch (KIP-98).
inline constexpr int16_t kBatchCompressionMask = 0x07;
inline constexpr int16_t kBatchTimestampTypeBit = 0x08;
inline constexpr int16_t kBatchTransactionalBit = 0x10;
inline constexpr int16_t kBatchControlBit = 0x20;

/// Why a Produce partition's records could not be read as one magic 2 batch.
/// Names are stable (record_batch_error_name): they become fall-back reasons.
enum class RecordBatchError : uint8_t {
  kOk = 0,
  kNullRecords,     ///< the records field is null
  kTruncated,       ///< fewer bytes than the header, or than batchLength says
  kOldMagic,        ///< magic 0 or 1 (a pre-KIP-98 message set: no producer id)
  kUnknownMagic,    ///< magic above 2 or negative
  kBadLength,       ///< batchLength shorter than the rest of the v2 header
  kBadRecordCount,  ///< record count <= 0 or not lastOffsetDelta + 1
  kPartialBatch,    ///< bytes after the last whole batch that are not a batch
};

/// Stable snake_case name of `e`, e.g. "old_magic".
const char* record_batch_error_name(RecordBatchError e);

/// The header fields of one magic 2 batch, as on the wire.
struct RecordBatchHeader {
  int64_t base_offset = 0;
  int32_t batch_length = 0;
  int32_t partition_leader_epoch = 0;
  int8_t magic = 0;
  uint32_t crc = 0;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t record_count = 0;

  bool transactional() const { return (attributes & kBatchTransactionalBit) != 0; }
  bool control() const { return (attributes & kBatchControlBit) != 0; }
  /// A producer id was assigned (InitProducerId): the broker checks sequences.
  bool idempotent() const { return producer_id >= 0; }
  /// Sequence of the batch's last record, wrapping past INT32_MAX to 0 the way
  /// Kafka's producer and broker do. Meaningful only when idempotent().
  int32_t last_sequence() const;
  /// Whole size of the batch in bytes (kBatchLogOverhead + batch_length).
  uint64_t size() const { return kBatchLogOverhead + static_cast<uint64_t>(batch_length); }
};

/// What read_record_batch_header found.
struct RecordBatchInfo {
  RecordBatchError error = RecordBatchError::kOk;
  uint32_t error_offset = 0;  ///< byte offset in the records where the error was found
  int8_t magic = -1;          ///< the first batch's magic byte, when there were 17 bytes
  RecordBatchHeader first;    ///< the first batch's header (valid when ok())
  uint32_t batch_count = 0;   ///< whole batches in the records (valid when ok())

  bool ok() const { return error == RecordBatchError::kOk; }
};

/// Reads the header of the first record batch in [data, data+size) and counts
/// the whole batches that follow it (their lengths and magic only). Produce v3+
/// carries exactly one batch per partition; more is reported, not refused.
/// The CRC is returned, not verified: the leader verifies it, and a corrupt
/// batch gets the same CORRUPT_MESSAGE from any broker.
/// Errors: see RecordBatchError; never reads outside the range.
RecordBatchInfo read_record_batch_header(const uint8_t* data, size_t size);

/// The same over a `records` field as decoded by the codec (null -> kNullRecords).
inline RecordBatchInfo read_record_batch_header(const Bytes& records) {
  if (records.is_null) {
    RecordBatchInfo info;
    info.error = RecordBatchError::kNullRecords;
    return info;
  }
  return read_record_batch_header(records.data, records.size);
}

}  // namespace epochgate::codec
