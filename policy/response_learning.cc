// policy/response_learning.cc: the view's adapters from broker responses
// (Produce, Fetch, ShareFetch, ShareAcknowledge, ListOffsets,
// OffsetForLeaderEpoch) to the facts and nodes the view learns from
// (KIP-951 CurrentLeader and NodeEndpoints, leader errors). Must never
// change the view except through learn_facts().
#include <optional>
#include <vector>

#include "policy/metadata_view.h"

namespace epochgate::policy {

namespace {

template <class NodeEndpointT>
void collect_nodes(const std::vector<NodeEndpointT>& in, std::vector<NodeInfo>& out) {
  for (const auto& n : in) out.push_back(NodeInfo{n.node_id, n.host, n.port, n.rack});
}

/// One partition's fact; `hinted`: the version carries the optional
/// KIP-951 CurrentLeader field.
template <class Partition>
detail::ResponseFact fact_of(const TopicRef& ref, int32_t index, const Partition& p, bool hinted) {
  detail::ResponseFact f{ref, index, p.error_code, -1, -1};
  if (hinted && p.current_leader) {
    f.hint_leader = p.current_leader->leader_id;
    f.hint_epoch = p.current_leader->leader_epoch;
  }
  return f;
}

/// The facts of a Produce or Fetch response: `kName`, `kParts` and `kIndex`
/// name the topic's name, its partition list and the partition's index;
/// `by_id`: the version names topics by id (v13+ of both).
template <auto kName, auto kParts, auto kIndex, class Topics>
std::vector<detail::ResponseFact> facts_of(const Topics& topics, bool by_id, bool hinted) {
  std::vector<detail::ResponseFact> all;
  for (const auto& t : topics) {
    TopicRef ref = by_id ? TopicRef{"", t.topic_id} : TopicRef{t.*kName, {}};
    for (const auto& p : t.*kParts) all.push_back(fact_of(ref, p.*kIndex, p, hinted));
  }
  return all;
}

template <class Endpoints>
std::vector<NodeInfo> nodes_of(const std::optional<Endpoints>& endpoints, bool present) {
  std::vector<NodeInfo> nodes;
  if (present && endpoints) collect_nodes(*endpoints, nodes);
  return nodes;
}

/// ShareFetch and ShareAcknowledge (KIP-932) always carry CurrentLeader and
/// NodeEndpoints, and name topics by id.
template <class Resp>
void collect_share(const Resp& resp, std::vector<detail::ResponseFact>& all,
                   std::vector<NodeInfo>& nodes) {
  collect_nodes(resp.node_endpoints, nodes);
  for (const auto& t : resp.responses)
    for (const auto& p : t.partitions)
      all.push_back(detail::ResponseFact{TopicRef{"", t.topic_id}, p.partition_index, p.error_code,
                                         p.current_leader.leader_id,
                                         p.current_leader.leader_epoch});
}

}  // namespace

LearnReport MetadataView::learn_interesting(std::vector<detail::ResponseFact> all,
                                            const std::vector<NodeInfo>& nodes,
                                            bool leader_only_api, int32_t target_node,
                                            uint64_t now_ms) {
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  for (auto& f : all)
    if (interesting(*snap, f, leader_only_api, target_node)) facts.push_back(std::move(f));
  return learn_facts(facts, nodes, leader_only_api, target_node, now_ms);
}

LearnReport MetadataView::learn_from_produce_response(const codec::ProduceResponse& resp,
                                                      int16_t version, int32_t target_node,
                                                      uint64_t now_ms) {
  using T = decltype(resp.responses)::value_type;
  using P = decltype(T::partition_responses)::value_type;
  auto all = facts_of<&T::name, &T::partition_responses, &P::index>(resp.responses, version >= 13,
                                                                    version >= 10);
  return learn_interesting(std::move(all), nodes_of(resp.node_endpoints, version >= 10), true,
                           target_node, now_ms);
}

LearnReport MetadataView::learn_from_fetch_response(const codec::FetchResponse& resp,
                                                    int16_t version, int32_t target_node,
                                                    uint64_t now_ms) {
  using T = decltype(resp.responses)::value_type;
  using P = decltype(T::partitions)::value_type;
  auto all = facts_of<&T::topic, &T::partitions, &P::partition_index>(resp.responses,
                                                                      version >= 13, version >= 12);
  // Fetch to a follower is legal (KIP-392): successes say nothing.
  return learn_interesting(std::move(all), nodes_of(resp.node_endpoints, version >= 16), false,
                           target_node, now_ms);
}

LearnReport MetadataView::learn_from_share_fetch_response(const codec::ShareFetchResponse& resp,
                                                          int16_t, int32_t target_node,
                                                          uint64_t now_ms) {
  std::vector<detail::ResponseFact> all;
  std::vector<NodeInfo> nodes;
  collect_share(resp, all, nodes);
  return learn_interesting(std::move(all), nodes, true, target_node, now_ms);
}

LearnReport MetadataView::learn_from_share_acknowledge_response(
    const codec::ShareAcknowledgeResponse& resp, int16_t, int32_t target_node, uint64_t now_ms) {
  std::vector<detail::ResponseFact> all;
  std::vector<NodeInfo> nodes;
  collect_share(resp, all, nodes);
  return learn_interesting(std::move(all), nodes, true, target_node, now_ms);
}

LearnReport MetadataView::learn_from_list_offsets_response(const codec::ListOffsetsResponse& resp,
                                                           int16_t, int32_t target_node,
                                                           uint64_t now_ms) {
  std::vector<detail::ResponseFact> all;
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions)
      all.push_back(
          detail::ResponseFact{TopicRef{t.name, {}}, p.partition_index, p.error_code, -1, -1});
  return learn_interesting(std::move(all), {}, false, target_node, now_ms);
}

LearnReport MetadataView::learn_from_offset_for_leader_epoch_response(
    const codec::OffsetForLeaderEpochResponse& resp, int16_t, int32_t target_node,
    uint64_t now_ms) {
  std::vector<detail::ResponseFact> all;
  for (const auto& t : resp.topics)
    for (const auto& p : t.partitions)
      all.push_back(detail::ResponseFact{TopicRef{t.topic, {}}, p.partition, p.error_code, -1, -1});
  return learn_interesting(std::move(all), {}, false, target_node, now_ms);
}

}  // namespace epochgate::policy
