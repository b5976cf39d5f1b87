// policy/metadata_snapshot.cc: lookups and the /debug/metadata JSON of one
// immutable snapshot. Must never: modify a published snapshot.
#include "common/json_writer.h"
#include "policy/metadata_snapshot.h"

#include <algorithm>
#include <cstdio>

namespace epochgate::policy {

const char* source_name(Source s) {
  switch (s) {
    case Source::kMetadataResponse:
      return "metadata_response";
    case Source::kRefresher:
      return "refresher";
    case Source::kHint:
      return "hint";
    case Source::kError:
      return "error";
    case Source::kServed:
      return "served";
  }
  return "unknown";
}

bool ReplicaSet::contains(int32_t node) const {
  return std::find(replicas.begin(), replicas.end(), node) != replicas.end() ||
         std::find(isr.begin(), isr.end(), node) != isr.end();
}

size_t TopicEntry::known_partitions() const {
  size_t n = 0;
  for (const auto& p : partitions) n += p.known ? 1 : 0;
  return n;
}

bool is_zero_uuid(const codec::Uuid& id) {
  for (uint8_t b : id)
    if (b != 0) return false;
  return true;
}

std::string uuid_to_string(const codec::Uuid& id) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve(22);
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : id) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

size_t UuidHash::operator()(const codec::Uuid& u) const noexcept {
  // Topic ids are random: folding the two halves is a good enough hash.
  uint64_t a = 0, b = 0;
  for (int i = 0; i < 8; ++i) a = (a << 8) | u[static_cast<size_t>(i)];
  for (int i = 8; i < 16; ++i) b = (b << 8) | u[static_cast<size_t>(i)];
  uint64_t h = a ^ (b * 0x9E3779B97F4A7C15ull);
  return static_cast<size_t>(h ^ (h >> 29));
}

MetadataSnapshot::MetadataSnapshot() {
  auto empty_names = std::make_shared<const NameShard>();
  auto empty_ids = std::make_shared<const IdShard>();
  by_name_.fill(empty_names);
  by_id_.fill(empty_ids);
  nodes_ = std::make_shared<const std::map<int32_t, NodeInfo>>();
}

const TopicEntry* MetadataSnapshot::find_topic(std::string_view name) const {
  const HashedName key{name, StringHash{}(name)};
  const NameShard& shard = *by_name_[key.hash % kShards];
  auto it = shard.find(key);
  return it == shard.end() ? nullptr : it->second.get();
}

const TopicEntry* MetadataSnapshot::find_topic(const codec::Uuid& id) const {
  if (is_zero_uuid(id)) return nullptr;
  const IdShard& shard = *by_id_[shard_of(id)];
  auto it = shard.find(id);
  return it == shard.end() ? nullptr : it->second.get();
}

const PartitionEntry* MetadataSnapshot::find_partition(std::string_view topic,
                                                       int32_t partition) const {
  const TopicEntry* t = find_topic(topic);
  return t ? t->partition(partition) : nullptr;
}

std::string_view MetadataSnapshot::forgotten_name(const codec::Uuid& id) const {
  if (!forgotten_ || is_zero_uuid(id)) return {};
  auto it = forgotten_->find(id);
  return it == forgotten_->end() ? std::string_view() : std::string_view(it->second);
}

const PartitionEntry* MetadataSnapshot::find_partition(const codec::Uuid& topic_id,
                                                       int32_t partition) const {
  const TopicEntry* t = find_topic(topic_id);
  return t ? t->partition(partition) : nullptr;
}

const NodeInfo* MetadataSnapshot::find_node(int32_t node_id) const {
  auto it = nodes_->find(node_id);
  return it == nodes_->end() ? nullptr : &it->second;
}

namespace {

using common::append_json_string;

void append_int_array(std::string& out, const std::vector<int32_t>& v) {
  out.push_back('[');
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(',');
    out += std::to_string(v[i]);
  }
  out.push_back(']');
}

}  // namespace

std::string MetadataSnapshot::to_json(uint64_t now_ms) const {
  std::string out;
  out += "{\"generation\":" + std::to_string(generation_);
  out += ",\"partition_count\":" + std::to_string(partition_count_);
  out += ",\"epoch_disputes_total\":" + std::to_string(epoch_disputes_total_);
  out += ",\"epoch_rollbacks_total\":" + std::to_string(epoch_rollbacks_total_);
  out += ",\"nodes\":[";
  bool first = true;
  for (const auto& [id, n] : *nodes_) {
    if (!first) out.push_back(',');
    first = false;
    out += "{\"node_id\":" + std::to_string(id) + ",\"upstream_host\":";
    append_json_string(out, n.host);
    out += ",\"upstream_port\":" + std::to_string(n.port) + ",\"rack\":";
    if (n.rack)
      append_json_string(out, *n.rack);
    else
      out += "null";
    out.push_back('}');
  }
  out += "],\"topics\":[";
  std::vector<const TopicEntry*> topics;
  for_each_topic([&](const TopicEntry& t) { topics.push_back(&t); });
  std::sort(topics.begin(), topics.end(),
            [](const TopicEntry* a, const TopicEntry* b) { return a->name < b->name; });
  first = true;
  for (const TopicEntry* t : topics) {
    if (!first) out.push_back(',');
    first = false;
    out += "{\"name\":";
    append_json_string(out, t->name);
    out += ",\"topic_id\":";
    if (is_zero_uuid(t->id))
      out += "null";
    else
      append_json_string(out, uuid_to_string(t->id));
    const uint64_t used = t->used_at_ms;
    out += ",\"unused_ms\":" + std::to_string(now_ms > used ? now_ms - used : 0);
    out += ",\"partitions\":[";
    bool pfirst = true;
    for (size_t i = 0; i < t->partitions.size(); ++i) {
      const PartitionEntry& p = t->partitions[i];
      if (!p.known) continue;
      if (!pfirst) out.push_back(',');
      pfirst = false;
      out += "{\"partition\":" + std::to_string(i);
      out += ",\"leader\":" + std::to_string(p.leader_id);
      out += ",\"epoch\":" + std::to_string(p.leader_epoch);
      out += ",\"replicas\":";
      append_int_array(out, p.replica_set ? p.replica_set->replicas : std::vector<int32_t>{});
      out += ",\"isr\":";
      append_int_array(out, p.replica_set ? p.replica_set->isr : std::vector<int32_t>{});
      out += ",\"age_ms\":" + std::to_string(p.age_ms(now_ms));
      out += ",\"source\":\"";
      out += source_name(p.source);
      out += "\",\"suspect\":";
      out += p.suspect() ? "true" : "false";
      if (p.conflicted) out += ",\"conflicted\":true";
      if (p.doubted) out += ",\"doubted\":true";
      if (p.lower.reports > 0) {
        // Lower epochs the cluster reported against this entry's epoch.
        out += ",\"lower_reports\":{\"disputed\":";
        out += p.disputed() ? "true" : "false";
        out += ",\"reports\":" + std::to_string(p.lower.reports);
        out += ",\"epoch\":" + std::to_string(p.lower.epoch);
        out += ",\"leader\":" + std::to_string(p.lower.leader);
        out += ",\"agreeing\":" + std::to_string(p.lower.agreeing);
        out += ",\"served\":" + std::to_string(p.lower.served) + "}";
      }
      if (p.rollbacks > 0) {
        out += ",\"rolled_back\":{\"count\":" + std::to_string(p.rollbacks);
        out += ",\"from_epoch\":" + std::to_string(p.rolled_back_from);
        out += ",\"served\":" + std::to_string(p.rolled_back_served);
        out += ",\"age_ms\":" +
               std::to_string(now_ms > p.rolled_back_at_ms ? now_ms - p.rolled_back_at_ms : 0) +
               "}";
      }
      out.push_back('}');
    }
    out += "]}";
  }
  out += "]}";
  return out;
}

}  // namespace epochgate::policy
