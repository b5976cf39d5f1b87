// codec/produce_head.h: the fields of a Produce request that the fencing
// decision reads (ProduceRequest schema, versions 0-13: Acks, each topic's
// Name or TopicId, each partition's Index), read in place from the frame.
// The session's common Produce is forwarded as it is, and for it a full
// decode (vectors of topics and partitions, owned names, freed again) was
// the largest cost per request; this walk allocates nothing once its
// per-thread storage has grown.
// Must never: accept a body the full decode (ProduceRequest::decode through
// decode_body_allow_trailing with the same entry cap) refuses, read a
// field differently, or outlive the frame (names are views into it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "codec/message_io.h"
#include "codec/messages/api_traits.h"
#include "codec/status.h"
#include "codec/types.h"

namespace epochgate::codec {

/// What the decision reads of one Produce request body. Names are views
/// into the body given to read(), valid while that buffer is; `partitions`
/// of each topic are views into this object's own storage.
struct ProduceHead {
  static constexpr int16_t kApiKey = ProduceRequest::kApiKey;
  static constexpr const char* kName = "ProduceRequest";

  struct Partition {
    int32_t index = 0;  ///< PartitionData.Index
  };
  struct Topic {
    std::string_view name;  ///< Name (v0-12); empty from v13
    Uuid topic_id{};        ///< TopicId (v13+); zero before
    /// Its partitions (set once the whole body was read).
    std::span<const Partition> partitions;
    uint32_t partition_count = 0;  ///< partitions.size(), counted while reading
  };

  int16_t acks = 0;
  std::vector<Topic> topics;
  /// Every topic's partitions, in wire order (each topic's span points here).
  std::vector<Partition> all_partitions;

  /// Walks Produce request body [body, body+len) of `version` with the
  /// checks, in the order, of ProduceRequest::decode under
  /// decode_body_allow_trailing: the same bodies fail (kUnsupportedVersion,
  /// kTruncated, kTooManyPartitions past `bounds.max_entries`, ...) and
  /// bytes after the body are left alone. On success the fields are those
  /// the full decode would give; on error they are unspecified. Reuses the
  /// vectors' capacity. `bounds.entries` and `bounds.decoded_bytes` (this
  /// object's vector storage, in bytes) are set, also on failure.
  Status read(const uint8_t* body, size_t len, int16_t version, DecodeBounds& bounds);

  /// Vector entries (topics, partitions) whose room read() keeps between
  /// requests; a caller reusing one object drops room beyond it.
  static constexpr size_t kKeptEntries = 1024;
  /// Gives the vectors' room back when it passed kKeptEntries.
  void trim();
};

/// The decision's view of a ProduceHead, as PartitionShape<ProduceRequest>
/// gives it of a decoded request (policy/decide.cc reads either).
template <>
struct PartitionShape<ProduceHead> {
  static constexpr bool kPresent = true;
  using Message = ProduceHead;
  using Topic = ProduceHead::Topic;
  using Partition = ProduceHead::Partition;
  static const std::vector<Topic>& topics(const Message& m) { return m.topics; }
  static std::span<const Partition> partitions(const Topic& t) { return t.partitions; }
  static bool by_id(int16_t v) { return PartitionShape<ProduceRequest>::by_id(v); }
  static std::string_view name(const Topic& t) { return t.name; }
  static const Uuid& id(const Topic& t) { return t.topic_id; }
  static int32_t partition(const Partition& p) { return p.index; }
  static constexpr bool kHasEpoch = PartitionShape<ProduceRequest>::kHasEpoch;
  static constexpr bool kEpochWritable = false;
  static bool has_epoch(int16_t) { return false; }
  static int32_t epoch(const Partition&) { return -1; }
  static bool from_replica(const Message&, int16_t) { return false; }
  static int32_t session_epoch(const Message&, int16_t) { return -1; }
  static bool follower_may_serve(int16_t) { return false; }
  static constexpr bool kBrokerSession = PartitionShape<ProduceRequest>::kBrokerSession;
  static bool acks_zero(const Message& m) { return m.acks == 0; }
};

}  // namespace epochgate::codec
