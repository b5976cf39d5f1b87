// proxy/core/reroute_plan.cc
#include "proxy/core/reroute_plan.h"

#include <algorithm>
#include <string_view>
#include <tuple>
#include <vector>

#include "codec/record_batch.h"

namespace epochgate::proxy {

namespace {

std::string uuid_text(const codec::Uuid& id) {
  static const char* kHex = "0123456789abcdef";
  std::string s;
  for (uint8_t b : id) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

// True when one topic-partition appears twice in `req` (by name, or by
// topic id from v13; the other is empty). Sorts, so a request with many
// partitions costs n log n.
bool repeats_a_partition(const codec::ProduceRequest& req) {
  std::vector<std::tuple<std::string_view, codec::Uuid, int32_t>> keys;
  for (const auto& t : req.topic_data)
    for (const auto& p : t.partition_data) keys.emplace_back(t.name, t.topic_id, p.index);
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) != keys.end();
}

}  // namespace

codec::ProduceRequest ReroutePlan::request_for(const std::vector<size_t>& indexes) const {
  codec::ProduceRequest r;
  r.transactional_id = transactional_id;
  r.acks = acks;
  r.timeout_ms = timeout_ms;
  for (size_t i : indexes) {
    const RerouteTargetPart& t = targets[i];
    if (r.topic_data.empty() || r.topic_data.back().name != t.topic ||
        r.topic_data.back().topic_id != t.topic_id) {
      auto& td = r.topic_data.emplace_back();
      td.name = t.topic;
      td.topic_id = t.topic_id;
    }
    auto& p = r.topic_data.back().partition_data.emplace_back();
    p.index = t.partition;
    p.records = t.records_null ? codec::Bytes::null()
                               : codec::Bytes{records.data() + t.records_offset, t.records_size};
  }
  return r;
}

std::shared_ptr<ReroutePlan> make_reroute_plan(const codec::ProduceRequest& req, int16_t version,
                                               const codec::RequestHeader& header,
                                               const policy::RequestDecision& d,
                                               const policy::ModeResolver& modes,
                                               const policy::MetadataSnapshot& view,
                                               int32_t node_id, BufferBudget* budget) {
  policy::RerouteTargets found = policy::reroute_targets(req, version, d, modes, view, node_id);
  auto plan = std::make_shared<ReroutePlan>();
  plan->observed = found.observed;
  plan->fenced = d.fenced;
  plan->version = version;
  plan->acks = req.acks;
  plan->timeout_ms = req.timeout_ms;
  plan->transactional_id = req.transactional_id;
  if (header.client_id) plan->client_id = std::string(*header.client_id);
  // Records of every partition of a rerouting topic are copied when an answer
  // is due: the fenced ones go now, the others if their broker says it is
  // no longer the leader. The copy lives as long as the request.
  size_t bytes = 0;
  for (uint32_t ti = 0; ti < req.topic_data.size(); ++ti)
    for (const auto& p : req.topic_data[ti].partition_data) bytes += p.records.size;
  // A partition named twice: Kafka's broker keeps only the last copy
  // (KafkaApis.handleProduceRequest collects partitions in a map), the
  // librdkafka mock appends both; a reroute of both would answer both with
  // one base offset. Such a request is not rerouted at all.
  plan->refuse = repeats_a_partition(req) ? "duplicate_partition" : nullptr;
  // acks=0 copies only the targets (no answer can ask for the others).
  if (req.acks == 0) {
    bytes = 0;
    for (const policy::RerouteTarget& t : found.partitions)
      bytes += req.topic_data[t.topic_index].partition_data[t.partition_index].records.size;
  }
  if (plan->refuse == nullptr && bytes > 0) {
    plan->charge = BudgetCharge(budget, bytes);
    if (budget != nullptr && budget->exceeded()) {
      plan->charge = BudgetCharge();
      plan->refuse = "buffer_budget";
    }
  }
  const bool copy = plan->refuse == nullptr;
  if (copy) plan->records.reserve(bytes);
  size_t next = 0;
  for (uint32_t ti = 0; ti < req.topic_data.size(); ++ti) {
    const auto& topic = req.topic_data[ti];
    std::string_view name = topic.name;
    if (version >= 13 || name.empty()) {
      const policy::TopicEntry* e = view.find_topic(topic.topic_id);
      name = e ? std::string_view(e->name) : std::string_view();
    }
    if (name.empty() || !modes.reroutes(name)) continue;
    std::string key_topic = version >= 13 ? uuid_text(topic.topic_id) : topic.name;
    for (uint32_t pi = 0; pi < topic.partition_data.size(); ++pi) {
      const auto& p = topic.partition_data[pi];
      RerouteStream s;
      s.key.topic = key_topic;
      s.key.partition = p.index;
      codec::RecordBatchInfo batch = codec::read_record_batch_header(p.records);
      if (batch.ok() && batch.first.idempotent()) s.key.producer_id = batch.first.producer_id;
      else s.key.client = plan->client_id;
      s.node = node_id;
      // The partition as a reroute sends it: its record bytes copied
      // unchanged into the plan, and why its batch cannot be rerouted, if so.
      auto copy_part = [&] {
        RerouteTargetPart part;
        part.topic_index = ti;
        part.topic = topic.name;
        part.topic_id = topic.topic_id;
        part.partition = p.index;
        part.records_null = p.records.is_null;
        part.records_offset = plan->records.size();
        part.records_size = p.records.size;
        if (copy && p.records.size > 0)
          plan->records.insert(plan->records.end(), p.records.data, p.records.data + p.records.size);
        // One magic 2 batch per partition is what the order rules can read.
        if (!batch.ok()) part.batch_error = codec::record_batch_error_name(batch.error);
        else if (batch.batch_count != 1) part.batch_error = "partial_batch";
        return part;
      };
      if (next < found.partitions.size() && found.partitions[next].topic_index == ti &&
          found.partitions[next].partition_index == pi) {
        const policy::RerouteTarget& t = found.partitions[next++];
        RerouteTargetPart part = copy_part();
        part.leader = t.leader;
        part.leader_epoch = t.leader_epoch;
        s.target = static_cast<int>(plan->targets.size());
        plan->targets.push_back(std::move(part));
      } else if (req.acks != 0 && d.at(ti, pi).mode == config::Mode::kEnforce) {
        RerouteTargetPart part = copy_part();
        s.spare = static_cast<int>(plan->spare.size());
        plan->spare.push_back(std::move(part));
      }
      plan->streams.push_back(std::move(s));
    }
  }
  // What the copies hold (at most the bound charged above).
  if (copy && bytes > 0) plan->charge = BudgetCharge(budget, plan->records.capacity());
  if (plan->streams.empty() && plan->observed == 0) return nullptr;
  return plan;
}

}  // namespace epochgate::proxy
