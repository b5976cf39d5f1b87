// policy/reroute_target.cc
#include "policy/reroute_target.h"

#include <string_view>

namespace epochgate::policy {

bool all_topics_reroute(const codec::ProduceRequest& req, int16_t version,
                        const ModeResolver& modes, const MetadataSnapshot& view) {
  if (req.topic_data.empty() || !modes.has_reroute_rules()) return false;
  for (const auto& t : req.topic_data) {
    std::string_view name = t.name;
    if (version >= 13 || name.empty()) {
      const TopicEntry* e = view.find_topic(t.topic_id);
      name = e ? std::string_view(e->name) : std::string_view();
    }
    if (name.empty() || !modes.reroutes(name)) return false;
  }
  return true;
}

RerouteTargets reroute_targets(const codec::ProduceRequest& req, int16_t version,
                               const RequestDecision& d, const ModeResolver& modes,
                               const MetadataSnapshot& view, int32_t node_id) {
  RerouteTargets out;
  if (d.api_key != 0 || d.topic_count() != req.topic_data.size()) return out;
  for (uint32_t ti = 0; ti < req.topic_data.size(); ++ti) {
    const auto& t = req.topic_data[ti];
    std::string_view name = t.name;
    if (version >= 13 || name.empty()) {
      const TopicEntry* e = view.find_topic(t.topic_id);
      name = e ? std::string_view(e->name) : std::string_view();
    }
    if (name.empty() || !modes.reroutes(name)) continue;
    for (uint32_t pi = 0; pi < t.partition_data.size(); ++pi) {
      const PartitionDecision& p = d.at(ti, pi);
      if (p.verdict != Verdict::kFence || p.reason != Reason::kNotLeader) continue;
      if (p.mode == config::Mode::kObserve) {
        ++out.observed;
        continue;
      }
      if (!p.answered_locally() || !p.has_hint() || p.hint_leader == node_id) continue;
      out.partitions.push_back(RerouteTarget{ti, pi, p.partition, p.hint_leader, p.hint_epoch});
    }
  }
  return out;
}

}  // namespace epochgate::policy
