// policy/response_learning.cc: the view's adapters from broker responses
// (Produce, Fetch, ShareFetch, ShareAcknowledge, ListOffsets,
// OffsetForLeaderEpoch) to the facts and nodes the view learns from
// (KIP-951 CurrentLeader and NodeEndpoints, leader errors). Must never
// change the view except through learn_facts().
#include <vector>

#include "policy/metadata_view.h"

namespace epochgate::policy {

namespace {

template <class NodeEndpointT>
void collect_nodes(const std::vector<NodeEndpointT>& in, std::vector<NodeInfo>& out) {
  for (const auto& n : in) out.push_back(NodeInfo{n.node_id, n.host, n.port, n.rack});
}

}  // namespace

LearnReport MetadataView::learn_from_produce_response(const codec::ProduceResponse& resp,
                                                      int16_t version, int32_t target_node,
                                                      uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  std::vector<NodeInfo> nodes;
  if (version >= 10 && resp.node_endpoints) collect_nodes(*resp.node_endpoints, nodes);
  for (const auto& t : resp.responses) {
    TopicRef ref = version >= 13 ? TopicRef{"", t.topic_id} : TopicRef{t.name, {}};
    for (const auto& p : t.partition_responses) {
      detail::ResponseFact f{ref, p.index, p.error_code, -1, -1};
      if (version >= 10 && p.current_leader) {
        f.hint_leader = p.current_leader->leader_id;
        f.hint_epoch = p.current_leader->leader_epoch;
      }
      if (interesting(*snap, f, true, target_node)) facts.push_back(std::move(f));
    }
  }
  return learn_facts(facts, nodes, true, target_node, now_ms);
}

LearnReport MetadataView::learn_from_fetch_response(const codec::FetchResponse& resp,
                                                    int16_t version, int32_t target_node,
                                                    uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  std::vector<NodeInfo> nodes;
  if (version >= 16 && resp.node_endpoints) collect_nodes(*resp.node_endpoints, nodes);
  for (const auto& t : resp.responses) {
    TopicRef ref = version >= 13 ? TopicRef{"", t.topic_id} : TopicRef{t.topic, {}};
    for (const auto& p : t.partitions) {
      detail::ResponseFact f{ref, p.partition_index, p.error_code, -1, -1};
      if (version >= 12 && p.current_leader) {
        f.hint_leader = p.current_leader->leader_id;
        f.hint_epoch = p.current_leader->leader_epoch;
      }
      // Fetch to a follower is legal (KIP-392): successes say nothing.
      if (interesting(*snap, f, false, target_node)) facts.push_back(std::move(f));
    }
  }
  return learn_facts(facts, nodes, false, target_node, now_ms);
}

namespace {

template <class Resp>
void collect_share(const Resp& resp, std::vector<detail::ResponseFact>& all,
                   std::vector<NodeInfo>& nodes) {
  collect_nodes(resp.node_endpoints, nodes);
  for (const auto& t : resp.responses) {
    for (const auto& p : t.partitions) {
      all.push_back(detail::ResponseFact{TopicRef{"", t.topic_id}, p.partition_index, p.error_code,
                                         p.current_leader.leader_id,
                                         p.current_leader.leader_epoch});
    }
  }
}

}  // namespace

LearnReport MetadataView::learn_from_share_fetch_response(const codec::ShareFetchResponse& resp,
                                                          int16_t version, int32_t target_node,
                                                          uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> all, facts;
  std::vector<NodeInfo> nodes;
  collect_share(resp, all, nodes);
  for (auto& f : all)
    if (interesting(*snap, f, true, target_node)) facts.push_back(std::move(f));
  return learn_facts(facts, nodes, true, target_node, now_ms);
}

LearnReport MetadataView::learn_from_share_acknowledge_response(
    const codec::ShareAcknowledgeResponse& resp, int16_t version, int32_t target_node,
    uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> all, facts;
  std::vector<NodeInfo> nodes;
  collect_share(resp, all, nodes);
  for (auto& f : all)
    if (interesting(*snap, f, true, target_node)) facts.push_back(std::move(f));
  return learn_facts(facts, nodes, true, target_node, now_ms);
}

LearnReport MetadataView::learn_from_list_offsets_response(const codec::ListOffsetsResponse& resp,
                                                           int16_t version, int32_t target_node,
                                                           uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions) {
      detail::ResponseFact f{TopicRef{t.name, {}}, p.partition_index, p.error_code, -1, -1};
      if (interesting(*snap, f, false, target_node)) facts.push_back(std::move(f));
    }
  return learn_facts(facts, {}, false, target_node, now_ms);
}

LearnReport MetadataView::learn_from_offset_for_leader_epoch_response(
    const codec::OffsetForLeaderEpochResponse& resp, int16_t version, int32_t target_node,
    uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions) {
      detail::ResponseFact f{TopicRef{t.topic, {}}, p.partition, p.error_code, -1, -1};
      if (interesting(*snap, f, false, target_node)) facts.push_back(std::move(f));
    }
  return learn_facts(facts, {}, false, target_node, now_ms);
}

}  // namespace epochgate::policy
