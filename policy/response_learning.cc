// policy/response_learning.cc: the view's one adapter from broker responses
// (every API the table marks learned: Produce, Fetch, ShareFetch,
// ShareAcknowledge, ListOffsets, OffsetForLeaderEpoch) to the facts and nodes
// the view learns from (KIP-951 CurrentLeader and NodeEndpoints, leader
// errors), written once over the generated partition shapes. Must never
// change the view except through learn_facts().
#include <optional>
#include <vector>

#include "codec/messages/api_traits.h"
#include "policy/metadata_view.h"

namespace epochgate::policy {

namespace {

/// NodeEndpoints as the view keeps them: tagged (Produce v10+, Fetch v16+)
/// or always present (ShareFetch, ShareAcknowledge).
template <class NodeEndpointT>
void collect_nodes(const std::vector<NodeEndpointT>& in, std::vector<NodeInfo>& out) {
  for (const auto& n : in) out.push_back(NodeInfo{n.node_id, n.host, n.port, n.rack});
}
template <class NodeEndpointT>
void collect_nodes(const std::optional<std::vector<NodeEndpointT>>& in,
                   std::vector<NodeInfo>& out) {
  if (in) collect_nodes(*in, out);
}

}  // namespace

template <class Resp>
LearnReport MetadataView::learn_from(const Resp& resp, int16_t version, int32_t target_node,
                                     uint64_t now_ms) {
  using A = codec::Api<Resp::kApiKey>;
  using R = codec::PartitionShape<Resp>;
  static_assert(A::kLearned && R::kPresent, "learn_from: an API the table marks learned");
  // Leader-only APIs (Produce, ShareFetch, ShareAcknowledge): a success from
  // a broker the view does not call leader says the view may be behind.
  // Fetch from a follower is legal (KIP-392), and ListOffsets and
  // OffsetForLeaderEpoch carry only leader errors: their successes say nothing.
  constexpr bool kLeaderOnly = A::kRule == codec::PolicyRule::kLeader;
  // Facts are made only for the partitions interesting() selects: most
  // responses have none, and copying every partition's topic name into a
  // fact first cost an allocation per response.
  auto snap = snapshot();
  std::vector<detail::ResponseFact> facts;
  for (const auto& t : R::topics(resp)) {
    const bool by_id = R::by_id(version);
    const std::string_view name = by_id ? std::string_view() : std::string_view(R::name(t));
    const codec::Uuid id = by_id ? R::id(t) : codec::Uuid{};
    for (const auto& p : R::partitions(t)) {
      detail::ResponseFact f{{}, R::partition(p), R::error_code(p), -1, -1};
      if constexpr (R::kHasHints) R::leader_hint(p, f.hint_leader, f.hint_epoch);
      if (!interesting(*snap, name, id, f, kLeaderOnly, target_node)) continue;
      f.topic = by_id ? TopicRef{"", id} : TopicRef{std::string(name), {}};
      facts.push_back(std::move(f));
    }
  }
  std::vector<NodeInfo> nodes;
  if constexpr (R::kHasHints) collect_nodes(resp.node_endpoints, nodes);
  return learn_facts(facts, nodes, kLeaderOnly, target_node, now_ms);
}

// Every API the table marks learned, Metadata aside (learn_metadata).
template LearnReport MetadataView::learn_from(const codec::ProduceResponse&, int16_t, int32_t,
                                              uint64_t);
template LearnReport MetadataView::learn_from(const codec::FetchResponse&, int16_t, int32_t,
                                              uint64_t);
template LearnReport MetadataView::learn_from(const codec::ListOffsetsResponse&, int16_t, int32_t,
                                              uint64_t);
template LearnReport MetadataView::learn_from(const codec::OffsetForLeaderEpochResponse&, int16_t,
                                              int32_t, uint64_t);
template LearnReport MetadataView::learn_from(const codec::ShareFetchResponse&, int16_t, int32_t,
                                              uint64_t);
template LearnReport MetadataView::learn_from(const codec::ShareAcknowledgeResponse&, int16_t,
                                              int32_t, uint64_t);

}  // namespace epochgate::policy
