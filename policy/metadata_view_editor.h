// policy/metadata_view_editor.h: one write transaction on the view
// (MetadataView::Editor): edits go to private copies of the touched topics
// and commit() builds the next snapshot sharing everything else, so readers
// never block and never see half an update. Internal to the view's .cc files.
// Must never publish anything itself: the view stores what commit() returns.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "policy/metadata_view.h"

namespace epochgate::policy {

/// One write transaction: edits are made on private copies of the touched
/// topics; commit() builds the next snapshot sharing everything else.
class MetadataView::Editor {
 public:
  /// `now_ms` stamps the use time of topics this transaction creates.
  Editor(std::shared_ptr<const MetadataSnapshot> base, uint64_t now_ms)
      : base_(std::move(base)), now_ms_(now_ms) {}

  /// Current content of a topic (edited copy or base), or nullptr.
  const TopicEntry* find(std::string_view name) const {
    auto it = dirty_.find(std::string(name));
    if (it != dirty_.end()) return it->second.get();
    return base_->find_topic(name);
  }
  /// The name of the topic with `id`, looking at edits first, then the
  /// snapshot and the topics it forgot; "" if unknown.
  std::string name_of(const codec::Uuid& id) const {
    if (is_zero_uuid(id)) return {};
    for (const auto& [name, t] : dirty_)
      if (t && t->id == id) return name;
    const TopicEntry* t = base_->find_topic(id);
    if (!t) return std::string(base_->forgotten_name(id));
    // The base may map the id to a topic that was since edited to a new id.
    const TopicEntry* now = find(t->name);
    return now && now->id == id ? t->name : std::string();
  }

  /// A private, writable copy of topic `name` (created empty if absent).
  TopicEntry& edit(const std::string& name) {
    auto it = dirty_.find(name);
    if (it != dirty_.end() && it->second) return *it->second;
    const TopicEntry* cur = base_->find_topic(name);
    auto copy = cur && it == dirty_.end() ? std::make_shared<TopicEntry>(*cur)
                                          : std::make_shared<TopicEntry>();
    if (copy->used_at_ms == 0) copy->used_at_ms = now_ms_;  // new: a full idle interval
    copy->name = name;
    TopicEntry& ref = *copy;
    dirty_[name] = std::move(copy);
    return ref;
  }
  void remove(const std::string& name) {
    if (find(name)) dirty_[name] = nullptr;
  }
  /// Removes topic `name` as unused, keeping its id's name for
  /// MetadataSnapshot::forgotten_name (at most kForgottenIds: past it, the
  /// older forgotten ids go first).
  void forget(const std::string& name) {
    const TopicEntry* t = find(name);
    if (!t) return;
    if (!is_zero_uuid(t->id)) {
      if (!forgotten_) {
        forgotten_ = base_->forgotten_ ? std::make_shared<MetadataSnapshot::IdNames>(*base_->forgotten_)
                                       : std::make_shared<MetadataSnapshot::IdNames>();
      }
      if (forgotten_->size() >= MetadataSnapshot::kForgottenIds) forgotten_->clear();
      (*forgotten_)[t->id] = name;
    }
    dirty_[name] = nullptr;
  }

  std::map<int32_t, NodeInfo>& edit_nodes() {
    if (!nodes_) nodes_ = std::make_shared<std::map<int32_t, NodeInfo>>(base_->nodes());
    return *nodes_;
  }
  const std::map<int32_t, NodeInfo>& nodes() const { return nodes_ ? *nodes_ : base_->nodes(); }

  bool changed() const { return !dirty_.empty() || nodes_changed_; }
  void mark_nodes_changed() { nodes_changed_ = true; }

  /// The next snapshot; `rep` is this transaction's report (its dispute and
  /// rollback counts are added to the snapshot's totals).
  std::shared_ptr<const MetadataSnapshot> commit(const LearnReport& rep) {
    auto next = std::make_shared<MetadataSnapshot>(*base_);
    next->generation_ = base_->generation_ + 1;
    next->epoch_disputes_total_ += rep.epochs_disputed;
    next->epoch_rollbacks_total_ += rep.epochs_rolled_back;
    std::array<std::shared_ptr<MetadataSnapshot::NameShard>, MetadataSnapshot::kShards> names;
    std::array<std::shared_ptr<MetadataSnapshot::IdShard>, MetadataSnapshot::kShards> ids;
    auto name_shard = [&](std::string_view n) -> MetadataSnapshot::NameShard& {
      size_t s = MetadataSnapshot::shard_of(n);
      if (!names[s]) {
        names[s] = std::make_shared<MetadataSnapshot::NameShard>(*base_->by_name_[s]);
        next->by_name_[s] = names[s];
      }
      return *names[s];
    };
    auto id_shard = [&](const codec::Uuid& id) -> MetadataSnapshot::IdShard& {
      size_t s = MetadataSnapshot::shard_of(id);
      if (!ids[s]) {
        ids[s] = std::make_shared<MetadataSnapshot::IdShard>(*base_->by_id_[s]);
        next->by_id_[s] = ids[s];
      }
      return *ids[s];
    };
    for (auto& [name, topic] : dirty_) {
      const TopicEntry* old = base_->find_topic(name);
      if (old) {
        next->partition_count_ -= old->known_partitions();
        next->topic_count_ -= 1;
        if (!is_zero_uuid(old->id)) {
          auto& shard = id_shard(old->id);
          auto it = shard.find(old->id);
          if (it != shard.end() && it->second->name == name) shard.erase(it);
        }
        name_shard(name).erase(name);
      }
      if (!topic) continue;
      MetadataSnapshot::TopicPtr ptr = topic;
      next->partition_count_ += topic->known_partitions();
      next->topic_count_ += 1;
      name_shard(name)[name] = ptr;
      if (!is_zero_uuid(topic->id)) id_shard(topic->id)[topic->id] = ptr;
    }
    if (nodes_) next->nodes_ = std::move(nodes_);
    if (forgotten_) next->forgotten_ = std::move(forgotten_);
    return next;
  }

 private:
  std::shared_ptr<const MetadataSnapshot> base_;
  uint64_t now_ms_;
  std::unordered_map<std::string, std::shared_ptr<TopicEntry>> dirty_;  // null: removed
  std::shared_ptr<std::map<int32_t, NodeInfo>> nodes_;
  std::shared_ptr<MetadataSnapshot::IdNames> forgotten_;  // null: the base's, unchanged
  bool nodes_changed_ = false;
};

}  // namespace epochgate::policy
