// policy/metadata_snapshot.h: one immutable picture of the cluster as epochgate
// knows it (docs/architecture.md section 5): per partition leader, leader epoch, replicas,
// ISR, when and from where it was learned; topic name <-> topic id; node id ->
// upstream host, port, rack. Readers hold a shared_ptr to a snapshot and never
// lock. Must never: change after it is published, do I/O, or read a clock.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codec/types.h"

namespace epochgate::policy {

/// Where a view entry was learned. Names (source_name) are stable: they appear
/// in /debug/metadata.
enum class Source : uint8_t {
  kMetadataResponse,  ///< a Metadata response passing through to a client
  kRefresher,         ///< epochgate's own Metadata request
  kHint,              ///< a KIP-951 CurrentLeader in a broker response
  kError,             ///< a leader error from a broker (marks, never sets a leader)
  kServed,            ///< a broker served a forwarded request at its epoch (KIP-320)
};
const char* source_name(Source s);

/// Replicas and ISR of one partition, shared between snapshots (immutable).
struct ReplicaSet {
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
  bool contains(int32_t node) const;  ///< in replicas or ISR
};

/// A field the view's writer may update in place in an entry that published
/// snapshots share, where only the latest value matters (when the entry was
/// last confirmed, and by whom): relaxed atomic loads and stores, copied by
/// value. Everything else in a published snapshot stays immutable.
template <class T>
class Restamp {
 public:
  Restamp(T v = T{}) noexcept : v_(v) {}  // NOLINT: implicit, reads like a plain field
  Restamp(const Restamp& o) noexcept : v_(o.load()) {}
  Restamp& operator=(const Restamp& o) noexcept {
    store(o.load());
    return *this;
  }
  Restamp& operator=(T v) noexcept {
    store(v);
    return *this;
  }
  operator T() const noexcept { return load(); }  // NOLINT: implicit, reads like a plain field
  T load() const noexcept { return v_.load(std::memory_order_relaxed); }
  void store(T v) const noexcept { v_.store(v, std::memory_order_relaxed); }

 private:
  mutable std::atomic<T> v_;
};

/// What the view knows about one partition.
struct PartitionEntry {
  int32_t leader_id = -1;      ///< -1: no leader
  int32_t leader_epoch = -1;   ///< -1: unknown (Metadata < v7) or no leader
  /// Last time a report agreed with this entry (ms). A report that only
  /// confirms the entry stamps it in place (MetadataView::learn_metadata),
  /// without publishing a new snapshot.
  Restamp<uint64_t> learned_at_ms = 0;
  uint64_t changed_at_ms = 0;  ///< last time the view saw the leader or epoch move (0: never)
  Restamp<Source> source = Source::kMetadataResponse;  ///< of the last report it took
  bool known = false;  ///< false: an empty slot (partition never learned)
  /// Same epoch seen with two leaders: never fence, never hint, until a
  /// strictly newer epoch arrives (librdkafka PR 5593).
  bool conflicted = false;
  /// A broker contradicted this entry (leader error without a usable hint, a
  /// lower epoch that may be a recreated topic): never fence until a refresh
  /// confirms it or a newer epoch arrives.
  bool doubted = false;
  /// The cluster keeps reporting a lower epoch for the same topic id (the
  /// entry's epoch may be bogus: an unclean election, a dying broker). Tally
  /// of those reports since the entry's epoch was set or last confirmed by
  /// the refresher; `disputed()` entries never fence, and after enough
  /// reports naming the same (leader, epoch) the view rolls back to it.
  struct LowerReports {
    int32_t epoch = -1;     ///< highest lower epoch reported (the rollback candidate)
    int32_t leader = -1;    ///< its leader
    uint16_t reports = 0;   ///< lower reports of any epoch
    uint16_t agreeing = 0;  ///< reports naming exactly (leader, epoch)
    uint16_t served = 0;    ///< of the reports: a broker serving a request at its lower epoch
    bool none() const { return epoch == -1 && leader == -1 && reports == 0 && agreeing == 0 && served == 0; }
  } lower;
  uint16_t rollbacks = 0;          ///< times this entry was rolled back (saturates)
  int32_t rolled_back_from = -1;   ///< epoch replaced by the last rollback (-1: none)
  uint64_t rolled_back_at_ms = 0;  ///< when (0: never)
  uint16_t rolled_back_served = 0;  ///< served reports among those that settled it
  std::shared_ptr<const ReplicaSet> replica_set;  ///< may be null (learned from a hint)

  /// Lower reports that stop fencing at once: more than one report, so one
  /// lagging broker's answer never turns off fencing after a real move.
  static constexpr uint16_t kDisputeReports = 2;
  bool disputed() const { return lower.reports >= kDisputeReports; }
  bool suspect() const { return conflicted || doubted || disputed(); }
  bool has_leader() const { return leader_id >= 0; }
  bool has_epoch() const { return leader_epoch >= 0; }
  /// A leader and an epoch that may be sent to a client as a hint.
  bool hintable() const { return known && !suspect() && leader_id >= 0 && leader_epoch >= 0; }
  bool is_replica(int32_t node) const { return replica_set && replica_set->contains(node); }
  uint64_t age_ms(uint64_t now_ms) const {
    return now_ms > learned_at_ms ? now_ms - learned_at_ms : 0;
  }
  uint64_t changed_age_ms(uint64_t now_ms) const {
    return now_ms > changed_at_ms ? now_ms - changed_at_ms : 0;
  }
};

/// One topic: its name, its id (zero when no version seen carried one) and
/// its partitions indexed by partition number. Every topic in a snapshot has
/// a name (a topic id the view cannot name is not stored: it is refreshed).
struct TopicEntry {
  std::string name;
  codec::Uuid id{};  ///< all zero: unknown
  std::vector<PartitionEntry> partitions;
  /// Last time a client request the policy decides on named the topic, or
  /// when the view first learned it (ms). Stamped in place by readers
  /// (mark_used); a topic unused for refresher.topic_idle_ms leaves the view
  /// (MetadataView::forget_unused_topics).
  Restamp<uint64_t> used_at_ms = 0;

  /// Stamps a use at `now_ms`, at most once every kUseStampMs: every
  /// worker's decisions read this entry, and a store on each would make its
  /// cache line bounce between cores. So a stamp lags a use by less than
  /// kUseStampMs (the loader refuses a topic_idle_ms under 1000).
  static constexpr uint64_t kUseStampMs = 250;
  void mark_used(uint64_t now_ms) const {
    if (now_ms >= used_at_ms.load() + kUseStampMs) used_at_ms.store(now_ms);
  }

  /// The entry for `partition`, or nullptr when never learned.
  const PartitionEntry* partition(int32_t partition) const {
    if (partition < 0 || static_cast<size_t>(partition) >= partitions.size()) return nullptr;
    const PartitionEntry& e = partitions[static_cast<size_t>(partition)];
    return e.known ? &e : nullptr;
  }
  size_t known_partitions() const;
};

/// Upstream address of one broker, exactly as the cluster advertised it.
struct NodeInfo {
  int32_t node_id = -1;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
  bool operator==(const NodeInfo&) const = default;
};

/// A topic named by name and/or id (either may be empty/zero), as the
/// refresher needs it: Metadata by name works on every version, by id on v12+.
struct TopicRef {
  std::string name;
  codec::Uuid id{};
  bool operator==(const TopicRef&) const = default;
};

bool is_zero_uuid(const codec::Uuid& id);
/// Kafka's text form of a topic id: URL-safe base64 without padding (22 chars).
std::string uuid_to_string(const codec::Uuid& id);

struct UuidHash {
  size_t operator()(const codec::Uuid& u) const noexcept;
};
/// A topic name with its StringHash already computed: the snapshot picks the
/// shard and the bucket with one hash of the name.
struct HashedName {
  std::string_view name;
  size_t hash;
};
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  size_t operator()(const HashedName& k) const noexcept { return k.hash; }
};
/// Name equality for the name index, also against a HashedName.
struct NameEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const noexcept { return a == b; }
  bool operator()(const HashedName& a, std::string_view b) const noexcept { return a.name == b; }
  bool operator()(std::string_view a, const HashedName& b) const noexcept { return a == b.name; }
};

/// The immutable picture. Built only by MetadataView (copy-on-write: topics
/// are shared between consecutive snapshots and only the changed ones, and
/// the shard of the index that holds them, are copied).
class MetadataSnapshot {
 public:
  static constexpr size_t kShards = 64;
  using TopicPtr = std::shared_ptr<const TopicEntry>;
  using NameShard = std::unordered_map<std::string, TopicPtr, StringHash, NameEqual>;
  using IdShard = std::unordered_map<codec::Uuid, TopicPtr, UuidHash>;

  MetadataSnapshot();

  /// Topic by name / by id; nullptr when unknown (zero id: always nullptr).
  const TopicEntry* find_topic(std::string_view name) const;
  const TopicEntry* find_topic(const codec::Uuid& id) const;
  /// Partition entry, or nullptr when the topic or partition is unknown.
  const PartitionEntry* find_partition(std::string_view topic, int32_t partition) const;
  const PartitionEntry* find_partition(const codec::Uuid& topic_id, int32_t partition) const;
  /// The name of a topic the view forgot (MetadataView::forget_unused_topics)
  /// by its id, or "": a request or response naming it by id only (Fetch
  /// v13+, Produce v13, the share APIs) can still have it refreshed by name.
  /// Holds the ids of at most kForgottenIds topics.
  std::string_view forgotten_name(const codec::Uuid& id) const;
  /// The name of the topic with `id`, in the snapshot or forgotten; "" if
  /// the view never held it.
  std::string_view topic_name(const codec::Uuid& id) const {
    const TopicEntry* t = find_topic(id);
    return t ? std::string_view(t->name) : forgotten_name(id);
  }
  static constexpr size_t kForgottenIds = 10000;
  /// Upstream address of a node, or nullptr.
  const NodeInfo* find_node(int32_t node_id) const;
  const std::map<int32_t, NodeInfo>& nodes() const { return *nodes_; }

  /// Number of known partitions (the `epochgate_view_partitions` gauge).
  size_t partition_count() const { return partition_count_; }
  size_t topic_count() const { return topic_count_; }
  /// Increases by one with every published snapshot.
  uint64_t generation() const { return generation_; }
  /// Since start: entries whose epoch the cluster disputed (repeated lower
  /// reports stopped their fencing), and entries rolled back to a lower epoch.
  uint64_t epoch_disputes_total() const { return epoch_disputes_total_; }
  uint64_t epoch_rollbacks_total() const { return epoch_rollbacks_total_; }

  /// Calls f(const TopicEntry&) for every topic (unspecified order).
  template <class F>
  void for_each_topic(F&& f) const {
    for (const auto& shard : by_name_)
      for (const auto& [name, t] : *shard) f(*t);
  }

  /// JSON for /debug/metadata: nodes (upstream addresses), the dispute and
  /// rollback totals, and every topic (with unused_ms: time since a request
  /// last named it) and partition with leader, epoch,
  /// replicas, isr, age_ms, source, suspect (and why: conflicted, doubted,
  /// disputed with the lower reports), and the last rollback if any.
  std::string to_json(uint64_t now_ms) const;

 private:
  friend class MetadataView;
  static size_t shard_of(std::string_view name) { return StringHash{}(name) % kShards; }
  static size_t shard_of(const codec::Uuid& id) { return UuidHash{}(id) % kShards; }

  std::array<std::shared_ptr<const NameShard>, kShards> by_name_;
  std::array<std::shared_ptr<const IdShard>, kShards> by_id_;
  std::shared_ptr<const std::map<int32_t, NodeInfo>> nodes_;
  using IdNames = std::unordered_map<codec::Uuid, std::string, UuidHash>;
  std::shared_ptr<const IdNames> forgotten_;  ///< may be null: none forgotten
  size_t partition_count_ = 0;
  size_t topic_count_ = 0;
  uint64_t generation_ = 0;
  uint64_t epoch_disputes_total_ = 0;
  uint64_t epoch_rollbacks_total_ = 0;
};

}  // namespace epochgate::policy
