// codec/produce_stream.cc
#include "codec/produce_stream.h"

#include <algorithm>

#include "codec/reader.h"
#include "codec/stream_fields.h"

namespace epochgate::proxy {

using stream_fields::read_length;
using stream_fields::skip_string;
using stream_fields::skip_tags;

ProduceStreamParser::ProduceStreamParser(int16_t version, size_t payload_size)
    : version_(version), flex_(version >= 9), payload_size_(payload_size) {}

ProduceStreamParser::Result ProduceStreamParser::fail(codec::Errc e, const char* detail) {
  if (error_.ok()) error_ = codec::Status{e, static_cast<uint32_t>(offset_), detail};
  detail_ = detail;
  state_ = State::kDone;
  return Result::kError;
}

ProduceStreamParser::Result ProduceStreamParser::feed(const uint8_t* data, size_t n,
                                                      size_t& consumed) {
  consumed = 0;
  while (true) {
    if (state_ == State::kDone) return error_.ok() ? Result::kDone : Result::kError;
    if (last_ && !reported_) {
      reported_ = true;
      return Result::kLastRecords;
    }
    const size_t left = payload_size_ - offset_;
    const size_t avail = std::min(n - consumed, left);
    if (state_ == State::kTrailing) {
      // Bytes after the body pass as they are, as a broker ignores them.
      consumed += avail;
      offset_ += avail;
      if (offset_ == payload_size_) state_ = State::kDone;
      if (state_ != State::kDone) return Result::kNeedMore;
      continue;
    }
    if (state_ == State::kRecords) {
      if (avail == 0) return Result::kNeedMore;  // lengths were checked against the payload
      size_t take = static_cast<size_t>(std::min<uint64_t>(avail, records_left_));
      consumed += take;
      pass_records(take);
      continue;
    }
    if (avail == 0) {
      if (left == 0) return fail(codec::Errc::kTruncated, "request ended inside a field");
      return Result::kNeedMore;
    }
    size_t used = unit(data + consumed, avail);
    if (!error_.ok()) return Result::kError;
    if (used == 0) {
      // Incomplete: more bytes will come, unless the payload has no more.
      if (avail >= left) return fail(codec::Errc::kTruncated, "request ended inside a field");
      if (avail >= kMaxUnitBytes) return fail(codec::Errc::kLengthOverflow, "fields too large to stream");
      return Result::kNeedMore;
    }
    consumed += used;
    offset_ += used;
    if (last_ && head_size_ == 0) head_size_ = offset_;
  }
}

void ProduceStreamParser::pass_records(size_t n) {
  if (state_ != State::kRecords || n == 0) return;
  n = static_cast<size_t>(std::min<uint64_t>(n, records_left_));
  offset_ += n;
  records_left_ -= n;
  if (records_left_ == 0) end_records();
}

size_t ProduceStreamParser::incomplete(const codec::Reader& r) {
  // Truncated: the unit's bytes have not all arrived. Anything else (a bad
  // varint, tags out of order) is malformed however many arrive.
  if (r.status().code != codec::Errc::kTruncated) fail(r.status().code, r.status().field);
  return 0;
}

size_t ProduceStreamParser::unit(const uint8_t* p, size_t avail) {
  codec::Reader r(p, avail);
  const size_t left = payload_size_ - offset_;
  // A count or length no payload could hold is malformed at once.
  auto bad_count = [&](int64_t count, size_t min_each, const char* what) {
    if (count < 0 || static_cast<uint64_t>(count) * min_each > left) {
      fail(count < -1 ? codec::Errc::kNegativeLength : codec::Errc::kLengthOverflow, what);
      return true;
    }
    return false;
  };
  switch (state_) {
    case State::kHeader: {
      // Request header v1 (v2 from Produce v9: tagged fields after the
      // client id, which stays an int16-length string).
      r.int16();  // api key
      r.int16();  // api version
      r.int32();  // correlation id
      skip_string(r, false);
      if (flex_) skip_tags(r);
      if (!r.ok()) return incomplete(r);
      state_ = State::kBody;
      return r.offset();
    }
    case State::kBody: {
      if (version_ >= 3) skip_string(r, flex_);  // TransactionalId
      r.int16();                                 // Acks
      r.int32();                                 // TimeoutMs
      int64_t topics = read_length(r, flex_);
      if (!r.ok()) return incomplete(r);
      if (bad_count(topics, 2, "TopicData")) return 0;
      topics_left_ = static_cast<int32_t>(topics);
      if (topics_left_ > 0)
        state_ = State::kTopic;
      else
        end_topics();
      return r.offset();
    }
    case State::kTopic: {
      if (version_ <= 12)
        skip_string(r, flex_);  // Name
      else
        r.uuid();  // TopicId
      int64_t parts = read_length(r, flex_);
      if (!r.ok()) return incomplete(r);
      if (bad_count(parts, 4, "PartitionData")) return 0;
      partitions_left_ = static_cast<int32_t>(parts);
      if (partitions_left_ > 0)
        state_ = State::kPartition;
      else
        end_partitions();
      return r.offset();
    }
    case State::kPartition: {
      r.int32();  // Index
      int64_t len = read_length(r, flex_);
      if (!r.ok()) return incomplete(r);
      // Checked against what follows the length itself.
      if (len < -1) {
        fail(codec::Errc::kNegativeLength, "Records");
        return 0;
      }
      if (len > 0 && static_cast<uint64_t>(len) > left - r.offset()) {
        fail(codec::Errc::kLengthOverflow, "Records");
        return 0;
      }
      records_left_ = len > 0 ? static_cast<uint64_t>(len) : 0;
      if (records_left_ > 0 && topics_left_ == 1 && partitions_left_ == 1) {
        last_ = true;  // feed() sets head_size_ once this unit is consumed
        length_offset_ = offset_ + 4;  // after Index
        last_records_size_ = records_left_;
      }
      if (records_left_ > 0)
        state_ = State::kRecords;
      else
        end_records();
      return r.offset();
    }
    case State::kPartitionTags: {
      skip_tags(r);
      if (!r.ok()) return incomplete(r);
      if (--partitions_left_ > 0)
        state_ = State::kPartition;
      else
        end_partitions();
      return r.offset();
    }
    case State::kTopicTags: {
      skip_tags(r);
      if (!r.ok()) return incomplete(r);
      if (--topics_left_ > 0)
        state_ = State::kTopic;
      else
        end_topics();
      return r.offset();
    }
    case State::kTopTags: {
      skip_tags(r);
      if (!r.ok()) return incomplete(r);
      state_ = State::kTrailing;
      return r.offset();
    }
    default:
      return 0;
  }
}

void ProduceStreamParser::end_records() {
  if (flex_) {
    state_ = State::kPartitionTags;
    return;
  }
  if (--partitions_left_ > 0)
    state_ = State::kPartition;
  else
    end_partitions();
}

void ProduceStreamParser::end_partitions() {
  if (flex_) {
    state_ = State::kTopicTags;
    return;
  }
  if (--topics_left_ > 0)
    state_ = State::kTopic;
  else
    end_topics();
}

void ProduceStreamParser::end_topics() {
  state_ = flex_ ? State::kTopTags : State::kTrailing;
}

}  // namespace epochgate::proxy
