// codec/fetch_stream.cc
#include "codec/fetch_stream.h"

#include <algorithm>

#include "codec/kafka_errors.h"
#include "codec/reader.h"
#include "codec/stream_fields.h"

namespace epochgate::proxy {

using stream_fields::read_length;
using stream_fields::read_tags;

FetchStreamParser::FetchStreamParser(int16_t version, size_t payload_size)
    : version_(version), flex_(version >= 12), payload_size_(payload_size) {}

FetchStreamParser::Result FetchStreamParser::fail(codec::Errc e, const char* detail) {
  if (error_.ok()) error_ = codec::Status{e, static_cast<uint32_t>(offset_), detail};
  detail_ = detail;
  state_ = State::kDone;
  return Result::kError;
}

FetchStreamParser::Result FetchStreamParser::feed(const uint8_t* data, size_t n, size_t& consumed) {
  consumed = 0;
  while (true) {
    if (state_ == State::kDone) return error_.ok() ? Result::kTail : Result::kError;
    const size_t left = payload_size_ - offset_;
    const size_t avail = std::min(n - consumed, left);
    const uint8_t* p = data + consumed;
    if (state_ == State::kTail) {
      if (left > kMaxUnitBytes) return fail(codec::Errc::kLengthOverflow, "tail too large to stream");
      if (avail < left) return Result::kNeedMore;
      if (parse_tail(p, avail) == 0) return Result::kError;
      state_ = State::kDone;
      return Result::kTail;
    }
    if (state_ == State::kRecords) {
      if (left == 0) return fail(codec::Errc::kTruncated, "response ended inside Records");
      if (avail == 0) return Result::kNeedMore;
      size_t take = static_cast<size_t>(std::min<uint64_t>(avail, records_left_));
      consumed += take;
      pass_records(take);
      continue;
    }
    if (avail == 0) {
      if (left == 0) return fail(codec::Errc::kTruncated, "response ended inside a field");
      return Result::kNeedMore;
    }
    size_t used = unit(p, avail);
    if (!error_.ok()) return Result::kError;
    if (used == 0) {
      // Incomplete: more bytes will come, unless the payload has no more.
      if (avail >= left) return fail(codec::Errc::kTruncated, "response ended inside a field");
      if (avail >= kMaxUnitBytes) return fail(codec::Errc::kLengthOverflow, "fields too large to stream");
      return Result::kNeedMore;
    }
    consumed += used;
    offset_ += used;
  }
}

void FetchStreamParser::pass_records(size_t n) {
  if (state_ != State::kRecords || n == 0) return;
  n = static_cast<size_t>(std::min<uint64_t>(n, records_left_));
  offset_ += n;
  records_left_ -= n;
  if (records_left_ > 0) return;
  if (flex_)
    state_ = State::kPartitionTags;
  else
    next_partition();
}

size_t FetchStreamParser::unit(const uint8_t* p, size_t avail) {
  codec::Reader r(p, avail);
  const size_t left = payload_size_ - offset_;
  // A count or length no payload could hold is malformed at once.
  auto bad_length = [&](int64_t len, size_t min_each, bool nullable, const char* what) {
    if ((len < 0 && !(nullable && len == -1)) || (len > 0 && static_cast<uint64_t>(len) * min_each > left)) {
      fail(len < -1 ? codec::Errc::kNegativeLength : codec::Errc::kLengthOverflow, what);
      return true;
    }
    return false;
  };
  switch (state_) {
    case State::kHeader: {
      r.int32();  // correlation id: the response path matched it already
      if (flex_) read_tags(r, [](uint32_t, codec::Bytes) {});
      if (version_ >= 1) skeleton_.throttle_time_ms = r.int32();
      if (version_ >= 7) {
        skeleton_.error_code = r.int16();
        skeleton_.session_id = r.int32();
      }
      int64_t topics = read_length(r, flex_);
      if (!r.ok()) return 0;
      if (bad_length(topics, 2, false, "Responses")) return 0;
      topics_left_ = static_cast<int32_t>(topics);
      state_ = topics_left_ > 0 ? State::kTopic : State::kTail;
      return r.offset();
    }
    case State::kTopic: {
      topic_ = {};
      if (version_ <= 12)
        topic_.topic = r.string(flex_);
      else
        topic_.topic_id = r.uuid();
      int64_t parts = read_length(r, flex_);
      if (!r.ok()) return 0;
      if (bad_length(parts, 4, false, "Partitions")) return 0;
      partitions_left_ = static_cast<int32_t>(parts);
      if (partitions_left_ > 0)
        state_ = State::kPartition;
      else
        end_partitions();
      return r.offset();
    }
    case State::kPartition: {
      partition_ = {};
      partition_.partition_index = r.int32();
      partition_.error_code = r.int16();
      partition_.high_watermark = r.int64();
      if (version_ >= 4) partition_.last_stable_offset = r.int64();
      if (version_ >= 5) partition_.log_start_offset = r.int64();
      int64_t aborted = 0;
      if (version_ >= 4) aborted = read_length(r, flex_);
      if (!r.ok()) return 0;
      if (bad_length(aborted, 16, true, "AbortedTransactions")) return 0;
      aborted_left_ = aborted > 0 ? static_cast<int32_t>(aborted) : 0;
      state_ = aborted_left_ > 0 ? State::kAborted : State::kBeforeRecords;
      return r.offset();
    }
    case State::kAborted: {
      r.int64();  // ProducerId
      r.int64();  // FirstOffset
      if (flex_) read_tags(r, [](uint32_t, codec::Bytes) {});
      if (!r.ok()) return 0;
      if (--aborted_left_ == 0) state_ = State::kBeforeRecords;
      return r.offset();
    }
    case State::kBeforeRecords: {
      if (version_ >= 11) partition_.preferred_read_replica = r.int32();
      int64_t len = read_length(r, flex_);
      if (!r.ok()) return 0;
      // Checked against what follows the length itself.
      if (len > 0 && static_cast<uint64_t>(len) > left - r.offset()) {
        fail(codec::Errc::kLengthOverflow, "Records");
        return 0;
      }
      if (bad_length(len, 1, true, "Records")) return 0;
      records_left_ = len > 0 ? static_cast<uint64_t>(len) : 0;
      if (records_left_ > 0)
        state_ = State::kRecords;
      else if (flex_)
        state_ = State::kPartitionTags;
      else
        next_partition();
      return r.offset();
    }
    case State::kPartitionTags: {
      codec::FetchResponse::PartitionData& part = partition_;
      read_tags(r, [&](uint32_t tag, codec::Bytes b) {
        if (tag != 1) return;  // DivergingEpoch and SnapshotId say nothing about leaders
        codec::Reader sub(b.data, b.size);
        codec::FetchResponse::LeaderIdAndEpoch leader;
        leader.read(sub, version_, true);
        if (sub.ok()) part.current_leader = leader;
      });
      if (!r.ok()) return 0;
      next_partition();
      return r.offset();
    }
    case State::kTopicTags: {
      read_tags(r, [](uint32_t, codec::Bytes) {});
      if (!r.ok()) return 0;
      if (!topic_.partitions.empty()) skeleton_.responses.push_back(std::move(topic_));
      topic_ = {};
      state_ = --topics_left_ > 0 ? State::kTopic : State::kTail;
      return r.offset();
    }
    default:
      return 0;
  }
}

void FetchStreamParser::next_partition() {
  const codec::FetchResponse::PartitionData& p = partition_;
  const bool hinted = p.current_leader && p.current_leader->leader_id >= 0;
  if (p.error_code == codec::kErrNotLeaderOrFollower || p.error_code == codec::kErrFencedLeaderEpoch)
    if (!hinted) ++unhinted_;
  // Successes from a broker say nothing to the view (followers serve
  // Fetch too): keep errors and hints only, so memory stays small.
  if ((p.error_code != 0 || hinted) && learned_ < kMaxLearnedPartitions) {
    topic_.partitions.push_back(p);
    ++learned_;
  }
  if (--partitions_left_ > 0) {
    state_ = State::kPartition;
    return;
  }
  end_partitions();
}

void FetchStreamParser::end_partitions() {
  if (flex_) {
    state_ = State::kTopicTags;
    return;
  }
  if (!topic_.partitions.empty()) skeleton_.responses.push_back(std::move(topic_));
  topic_ = {};
  state_ = --topics_left_ > 0 ? State::kTopic : State::kTail;
}

size_t FetchStreamParser::parse_tail(const uint8_t* p, size_t avail) {
  if (!flex_) return avail == 0 ? 1 : avail;  // bytes after a body pass as they are
  codec::Reader r(p, avail);
  bool bad_endpoints = false;
  read_tags(r, [&](uint32_t tag, codec::Bytes b) {
    if (tag != 0 || version_ < 16) {
      other_tags_.push_back(codec::TaggedField{tag, b});
      return;
    }
    codec::Reader sub(b.data, b.size);
    int64_t count = read_length(sub, true);
    if (!sub.ok() || count < 0 || static_cast<uint64_t>(count) > b.size) {
      bad_endpoints = true;
      return;
    }
    std::vector<codec::FetchResponse::NodeEndpoint> eps;
    eps.reserve(static_cast<size_t>(count));
    for (int64_t i = 0; i < count && sub.ok(); ++i) {
      codec::FetchResponse::NodeEndpoint ep;
      ep.read(sub, version_, true);
      eps.push_back(std::move(ep));
    }
    if (!sub.ok() || sub.remaining() != 0) bad_endpoints = true;
    skeleton_.node_endpoints = std::move(eps);
  });
  if (!r.ok() || bad_endpoints) {
    fail(r.ok() ? codec::Errc::kBadTaggedFields : r.status().code, "top-level tagged fields");
    return 0;
  }
  section_size_ = r.offset();
  return avail == 0 ? 1 : avail;
}

}  // namespace epochgate::proxy
