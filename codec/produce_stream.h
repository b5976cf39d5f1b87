// codec/produce_stream.h: reads one Produce request (ProduceRequest schema,
// versions 0-13, request header v1 / v2 from v9, topic ids from v13)
// incrementally, as its bytes arrive in chunks of any size, so that the
// request can be decided on its head and its last partition's record bytes
// forwarded while they arrive (or moved socket to socket, never read).
// Every field the decision reads precedes the last partition's records, and
// the topic and partition counts tell when that partition is reached.
// Owns parsing only: never writes to a connection, never keeps a view into
// the bytes it was given, never holds more than one small unit unparsed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/reader.h"
#include "codec/status.h"

namespace epochgate::proxy {

/// Incremental reader of a Produce request payload (the bytes after the
/// 4-byte size prefix, header included). Record bytes are passed over,
/// never parsed; tagged fields are checked for shape and passed over; bytes
/// after the body pass as they are (as a broker ignores them).
class ProduceStreamParser {
 public:
  /// Largest unit (a header, a topic's or a partition's fields, a tagged
  /// section) that may wait unparsed, in bytes: one needing more is
  /// malformed for streaming. Real requests stay far below it.
  static constexpr size_t kMaxUnitBytes = 1 << 20;

  enum class Result {
    kNeedMore,     ///< the next unit is incomplete: call again with more bytes
    kLastRecords,  ///< reached (once) the start of the last partition's records
    kDone,         ///< the payload's last byte was consumed
    kError,        ///< malformed: see error()
  };

  /// `version`: the request's Produce version; `payload_size`: the size
  /// prefix's value (bytes after the prefix).
  ProduceStreamParser(int16_t version, size_t payload_size);

  /// Parses from `data` (`n` bytes: the unread bytes of the payload,
  /// starting where the previous call's `consumed` ended). Sets `consumed`:
  /// bytes parsed, which the caller forwards unchanged and drops. Stops
  /// after the last partition's records length (kLastRecords) so the caller
  /// may decide on head_size() bytes before any record byte of it moves.
  Result feed(const uint8_t* data, size_t n, size_t& consumed);

  /// Inside a partition's records: its record bytes not consumed yet (0
  /// elsewhere). The caller may move up to this many without showing them.
  uint64_t records_left() const { return state_ == State::kRecords ? records_left_ : 0; }
  /// `n` (at most records_left()) record bytes went upstream without
  /// passing through feed() (spliced socket to socket).
  void pass_records(size_t n);
  /// True from kLastRecords on: the records being read are the last
  /// partition's, and only tagged fields (v9+) and trailing bytes follow.
  bool in_last_partition() const { return last_; }
  /// Payload bytes before the last partition's records (its length field
  /// included): what the decision reads. Valid from kLastRecords on.
  size_t head_size() const { return head_size_; }
  /// Where the last partition's records length field starts in the payload
  /// (the head without it is the request up to that field). Valid from
  /// kLastRecords on.
  size_t records_length_offset() const { return length_offset_; }
  /// Record bytes of the last partition (its records length). Valid from
  /// kLastRecords on.
  uint64_t last_records_size() const { return last_records_size_; }
  /// Bytes after the last partition's records: its tagged fields, its
  /// topic's, the top-level ones (v9+) and anything after the body. Valid
  /// from kLastRecords on.
  size_t trailing_size() const {
    return payload_size_ - head_size_ - static_cast<size_t>(last_records_size_);
  }
  /// Payload bytes not consumed yet.
  size_t left() const { return payload_size_ - offset_; }
  /// What failed, for the log line and the metric reason.
  const codec::Status& error() const { return error_; }
  const char* error_detail() const { return detail_; }
  int16_t version() const { return version_; }

 private:
  enum class State {
    kHeader, kBody, kTopic, kPartition, kRecords, kPartitionTags, kTopicTags, kTopTags,
    kTrailing, kDone,
  };
  /// Parses one unit of the current state from [p, p+avail) (avail bounded
  /// by the payload's end). Returns bytes used, 0 when more are needed, or
  /// sets error_.
  size_t unit(const uint8_t* p, size_t avail);
  /// A unit's Reader failed: 0 (more bytes needed) when it ran out of
  /// bytes, else sets error_.
  size_t incomplete(const codec::Reader& r);
  /// A partition's records were passed (or it had none).
  void end_records();
  /// The topic's last partition was read: its tagged fields, or the next topic.
  void end_partitions();
  /// The last topic was read: the top-level tagged fields, or the trailing bytes.
  void end_topics();
  Result fail(codec::Errc e, const char* detail);

  int16_t version_;
  bool flex_;
  size_t payload_size_;
  size_t offset_ = 0;  // payload bytes consumed so far
  State state_ = State::kHeader;
  int32_t topics_left_ = 0;
  int32_t partitions_left_ = 0;
  uint64_t records_left_ = 0;
  bool last_ = false;      // the records being read are the last partition's
  bool reported_ = false;  // kLastRecords was returned
  size_t head_size_ = 0;
  size_t length_offset_ = 0;
  uint64_t last_records_size_ = 0;
  codec::Status error_;
  const char* detail_ = "";
};

}  // namespace epochgate::proxy
