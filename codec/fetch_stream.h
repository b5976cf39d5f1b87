// codec/fetch_stream.h: reads one Fetch response (FetchResponse schema,
// versions 0-18, response header v0 / v1 from v12) incrementally, as its
// bytes arrive in chunks of any size, so that a large response can be
// relayed to the client before its last byte is read. Keeps what the view
// learns from (partition errors, CurrentLeader, NodeEndpoints) in a
// skeleton response without records. Owns parsing only: never writes to a
// connection, never keeps a view into the bytes it was given, never holds
// more than one small unit (the fields between two Records) unparsed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "codec/messages/fetch_response.h"
#include "codec/status.h"

namespace epochgate::proxy {

/// Incremental reader of a Fetch response payload (the bytes after the
/// 4-byte size prefix). Everything before the top-level tagged fields is
/// passed through unchanged; the tail (the top-level tagged fields, where
/// v16+ NodeEndpoints lives, and any bytes a broker sent after the body) is
/// handed over whole so the caller may rewrite it to the same length.
class FetchStreamParser {
 public:
  /// Largest run of fields between two record sets (a partition's fields
  /// before Records, one aborted transaction, a tagged-field section) or
  /// tail that may wait unparsed, in bytes: a unit needing more is
  /// malformed for streaming. Real responses stay far below it.
  static constexpr size_t kMaxUnitBytes = 1 << 20;
  /// Partitions kept in the skeleton for learning (errors and hints only);
  /// more are passed through without being learned from.
  static constexpr size_t kMaxLearnedPartitions = 65536;

  enum class Result {
    kNeedMore,  ///< the next unit is incomplete: call again with more bytes
    kTail,      ///< the tail is complete at data+consumed, tail_size() bytes
    kError,     ///< malformed: see error()
  };

  /// `version`: the Fetch version both sides use; `payload_size`: the size
  /// prefix's value (bytes after the prefix).
  FetchStreamParser(int16_t version, size_t payload_size);

  /// Parses from `data` (`n` bytes: the unread bytes of the payload, starting
  /// where the previous call's `consumed` ended). Sets `consumed`: bytes
  /// parsed, which the caller forwards unchanged and drops. kTail also
  /// parses the tail (tail_size() bytes after `consumed`), not consumed.
  Result feed(const uint8_t* data, size_t n, size_t& consumed);

  /// Inside a partition's Records: its record bytes not consumed yet (0
  /// elsewhere). The caller may move up to this many without showing them
  /// (pass_records()): record bytes are never parsed.
  uint64_t records_left() const { return state_ == State::kRecords ? records_left_ : 0; }
  /// `n` (at most records_left()) record bytes went to the client without
  /// passing through feed() (spliced socket to socket).
  void pass_records(size_t n);

  /// Payload bytes not consumed yet.
  size_t left() const { return payload_size_ - offset_; }
  /// Bytes of the tail (known once every topic was read).
  size_t tail_size() const { return payload_size_ - offset_; }
  /// Of the tail: the top-level tagged section's length (0 before v12).
  size_t tagged_section_size() const { return section_size_; }
  /// The partitions worth learning from (error codes, CurrentLeader) and,
  /// after kTail, the broker's NodeEndpoints (upstream addresses).
  codec::FetchResponse& skeleton() { return skeleton_; }
  /// The top-level tagged fields other than NodeEndpoints, in tag order
  /// (views into the tail bytes given to the kTail call).
  const codec::TaggedFields& other_tags() const { return other_tags_; }
  /// Partitions seen with a leader error and no CurrentLeader.
  size_t unhinted_leader_errors() const { return unhinted_; }
  /// What failed, for the log line and the metric reason.
  const codec::Status& error() const { return error_; }
  const char* error_detail() const { return detail_; }
  int16_t version() const { return version_; }

 private:
  enum class State {
    kHeader, kTopic, kPartition, kAborted, kBeforeRecords, kRecords, kPartitionTags,
    kTopicTags, kTail, kDone,
  };
  /// Parses one unit of the current state from [p, p+avail) (avail bounded
  /// by the payload's end). Returns bytes used, 0 when more are needed,
  /// or sets error_.
  size_t unit(const uint8_t* p, size_t avail);
  size_t parse_tail(const uint8_t* p, size_t avail);
  void next_partition();
  /// The topic's last partition was read: its tagged fields, or the next topic.
  void end_partitions();
  Result fail(codec::Errc e, const char* detail);

  int16_t version_;
  bool flex_;
  size_t payload_size_;
  size_t offset_ = 0;  // payload bytes consumed so far
  State state_ = State::kHeader;
  int32_t topics_left_ = 0;
  int32_t partitions_left_ = 0;
  int32_t aborted_left_ = 0;
  uint64_t records_left_ = 0;
  codec::FetchResponse::FetchableTopicResponse topic_;  // the topic being read
  codec::FetchResponse::PartitionData partition_;        // the partition being read
  codec::FetchResponse skeleton_;
  size_t learned_ = 0;
  size_t unhinted_ = 0;
  size_t section_size_ = 0;
  codec::TaggedFields other_tags_;
  codec::Status error_;
  const char* detail_ = "";
};

}  // namespace epochgate::proxy
