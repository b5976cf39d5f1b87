// policy/metadata_view.h: the one writer of epochgate's view of the cluster
// (docs/architecture.md section 5). Learns from Metadata responses, KIP-951 CurrentLeader
// hints and NodeEndpoints, and leader errors in broker responses; publishes a
// new immutable MetadataSnapshot after each change. Must never: let one report
// move an epoch backwards for a (topic id, partition) (only repeated
// confirmations roll a bogus epoch back), do I/O, or read a clock (callers
// pass now_ms).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "codec/messages/fetch_response.h"
#include "codec/messages/list_offsets_response.h"
#include "codec/messages/metadata_response.h"
#include "codec/messages/offset_for_leader_epoch_response.h"
#include "codec/messages/produce_response.h"
#include "codec/messages/share_acknowledge_response.h"
#include "codec/messages/share_fetch_response.h"
#include "policy/metadata_snapshot.h"

namespace epochgate::policy {

namespace detail {
/// One partition of a broker response that the view must look at.
struct ResponseFact {
  TopicRef topic;
  int32_t partition = 0;
  int16_t error_code = 0;
  int32_t hint_leader = -1;  ///< CurrentLeader, -1 when absent
  int32_t hint_epoch = -1;
};
}  // namespace detail

/// What one learn call changed. The caller feeds `urgent_refresh` to the
/// refresher (which coalesces and rate-limits) and `new_nodes` to the
/// listener manager (a listener per node id).
struct LearnReport {
  uint32_t partitions_learned = 0;       ///< entries created
  uint32_t epochs_advanced = 0;          ///< entries whose leader epoch moved forward
  uint32_t leaders_confirmed = 0;        ///< reports agreeing with the entry (age reset)
  uint32_t stale_ignored = 0;            ///< reports with a lower epoch than the view
  uint32_t marked_suspect = 0;           ///< entries that may no longer fence
  uint32_t hints_learned = 0;            ///< CurrentLeader hints that advanced the view
  uint32_t topics_recreated = 0;         ///< a new topic id for a known name
  uint32_t topics_removed = 0;           ///< the cluster said the topic does not exist
  /// Entries that stopped fencing because the cluster repeatedly reported a
  /// lower epoch for the same topic id (their epoch may be bogus).
  uint32_t epochs_disputed = 0;
  /// Entries moved back to the lower epoch the cluster confirmed enough times.
  uint32_t epochs_rolled_back = 0;
  /// Partitions learned with a leader but no epoch (Metadata < v7 passing
  /// through), or whose leader such a report moved (the entry's epoch-less
  /// leader, or the leader of an entry with an epoch, which is then
  /// doubted): they cannot fence until the refresher learns their epoch, so
  /// they ask for a refresh that confirms them at once
  /// (Refresher::request_confirm).
  uint32_t learned_without_epoch = 0;
  /// Topics first learned with leader epochs but no topic id (Metadata v7 to
  /// v9 passing through): until the view has the id, a lower epoch cannot be
  /// told from a recreated topic and stops fencing, so they ask for an
  /// urgent refresh at epochgate's own version (v10+ carries the id).
  uint32_t learned_without_topic_id = 0;
  std::vector<TopicRef> urgent_refresh;  ///< deduplicated
  std::vector<int32_t> new_nodes;        ///< node ids never seen before
  bool published = false;                ///< a new snapshot was published

  /// Adds `o` into this report (dedupes the lists).
  void merge(const LearnReport& o);
  void add_refresh(const TopicRef& t);

 private:
  std::unordered_set<std::string> refresh_seen_;  ///< name + id of each urgent_refresh entry
};

/// The view. Thread-safe: any number of readers call snapshot() (an atomic
/// load); writers are serialised by a mutex and publish whole snapshots.
class MetadataView {
 public:
  MetadataView();

  /// Lower-epoch reports (same topic id) naming one (leader, epoch) that roll
  /// an entry back to it. One report never moves an epoch backwards, so
  /// values below 2 are raised to 2 (policy.epoch_rollback_confirmations).
  static constexpr uint32_t kDefaultRollbackConfirmations = 3;
  void set_rollback_confirmations(uint32_t n);
  uint32_t rollback_confirmations() const { return rollback_confirmations_.load(); }

  /// The current snapshot; never null. Cheap (atomic shared_ptr load).
  std::shared_ptr<const MetadataSnapshot> snapshot() const { return current_.load(); }

  /// Learns brokers, topic ids and every partition of a Metadata response of
  /// `version` (epochs from v7, topic ids from v10). A lower epoch for the
  /// same topic id is tallied against the entry: repeated reports stop its
  /// fencing, rollback_confirmations() reports of one (leader, epoch) roll it
  /// back; a refresher answer confirming the entry's epoch clears the tally.
  /// A partition learned with a leader and no epoch, outside the refresher,
  /// asks for an urgent refresh (so old clients get fencing). A topic error
  /// UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID forgets the topic. Call it
  /// before the proxy rewrites broker addresses (the view keeps upstream ones).
  LearnReport learn_metadata(const codec::MetadataResponse& resp, int16_t version, uint64_t now_ms,
                             Source source);

  /// Learns one KIP-951 CurrentLeader (or any leader report) for a partition
  /// named by `topic` (name and/or id). A leader or epoch of -1 is ignored
  /// (never stored as a hint). A lower epoch is ignored; the same epoch with a
  /// different leader marks the entry conflicted and asks for a refresh.
  LearnReport learn_current_leader(const TopicRef& topic, int32_t partition, int32_t leader_id,
                                   int32_t leader_epoch, uint64_t now_ms, Source source);

  /// Learns upstream node addresses (NodeEndpoints of Produce v10+, Fetch
  /// v16+, ShareFetch, ShareAcknowledge), before the proxy rewrites them.
  LearnReport learn_nodes(const std::vector<NodeInfo>& nodes);

  /// Learns from a broker response to a request the proxy forwarded to
  /// `target_node` (-1 unknown): CurrentLeader hints, NodeEndpoints, and
  /// leader errors. NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
  /// UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID and
  /// LEADER_NOT_AVAILABLE without a hint that advances the view ask for an
  /// urgent refresh; NOT_LEADER_OR_FOLLOWER from the very broker the view
  /// calls leader also marks the entry doubted (it stops fencing until a
  /// refresh confirms it or a newer epoch arrives). For leader-only APIs
  /// (Produce, share), a success from a broker the view does not call leader
  /// asks for a refresh too (the view may be behind). Feed only upstream
  /// responses here, never epochgate's own local answers.
  /// `Resp` is any response the API table marks learned, Metadata aside
  /// (Produce, Fetch, ShareFetch, ShareAcknowledge, ListOffsets,
  /// OffsetForLeaderEpoch; policy/response_learning.cc), decoded at
  /// `version`. ListOffsets and OffsetForLeaderEpoch carry no hints: only
  /// their leader errors count.
  template <class Resp>
  LearnReport learn_from(const Resp& resp, int16_t version, int32_t target_node, uint64_t now_ms);
  /// True when a leader-only API's success from `target_node` on partition
  /// `partition` of topic `name` (by `id` when `name` is empty) tells `snap`
  /// something: its entry is hintable and names another leader (the view
  /// may be behind). The rule learn_from() applies to every success.
  static bool success_is_news(const MetadataSnapshot& snap, std::string_view name,
                              const codec::Uuid& id, int32_t partition, int32_t target_node);

  /// One partition a broker served without error for a request the proxy
  /// forwarded at `epoch` (the request's CurrentLeaderEpoch).
  struct Served {
    TopicRef topic;
    int32_t partition = 0;
    int32_t epoch = -1;
  };
  /// Learns that broker `node` served each of `served` at its request epoch.
  /// A broker answers a request whose CurrentLeaderEpoch is not its own with
  /// FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH (KIP-320), so a success at
  /// an epoch below the view's is the cluster saying the view's epoch is
  /// wrong: for the same topic id it stops the entry's fencing at once and
  /// counts as one confirmation of (node, epoch) towards the rollback; with
  /// no topic id to compare it doubts the entry until a refresh. Partitions
  /// at or above the view's epoch change nothing (policy/served_learning.cc).
  LearnReport learn_served(const std::vector<Served>& served, int32_t node, uint64_t now_ms);

  /// Drops every topic whose use time (TopicEntry::used_at_ms: the last
  /// client request the policy decided on that named it, else when the view
  /// learned it) is more than `idle_ms` before `now_ms`, in one published
  /// snapshot, so the view and the refresher's periodic Metadata hold only
  /// the topics clients use (Kafka's metadata.max.idle.ms for producers).
  /// A later request naming one finds no entry: it is forwarded unfenced and
  /// asks for an urgent refresh, which learns the topic again. Returns the
  /// dropped names, sorted.
  std::vector<std::string> forget_unused_topics(uint64_t now_ms, uint64_t idle_ms);

  /// JSON of the current snapshot for /debug/metadata.
  std::string to_json(uint64_t now_ms) const { return snapshot()->to_json(now_ms); }
  /// Known partitions in the current snapshot.
  size_t partition_count() const { return snapshot()->partition_count(); }

  class Editor;  ///< one write transaction (metadata_view.cc)

 private:
  /// Applies the interesting partitions of one response under the lock.
  LearnReport learn_facts(const std::vector<detail::ResponseFact>& facts,
                          const std::vector<NodeInfo>& nodes, bool leader_only_api,
                          int32_t target_node, uint64_t now_ms);
  /// Read-only pre-scan: true when partition `f` of the topic named `name`
  /// (or, when `name` is empty, with id `id`) needs learn_facts. `f.topic`
  /// is not read: it is filled only for the partitions that are.
  bool interesting(const MetadataSnapshot& snap, std::string_view name, const codec::Uuid& id,
                   const detail::ResponseFact& f, bool leader_only_api,
                   int32_t target_node) const;
  std::mutex write_mu_;
  std::atomic<uint32_t> rollback_confirmations_{kDefaultRollbackConfirmations};
  std::atomic<std::shared_ptr<const MetadataSnapshot>> current_;
};

}  // namespace epochgate::policy
