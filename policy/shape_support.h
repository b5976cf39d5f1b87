// policy/shape_support.h: helpers shared by the answer files (local answers,
// request rewrite, response merge, hint backfill), written once over the
// generated partition shapes (codec/messages/api_traits.h): the decision of
// one request partition, topic keys, the mode group of an API, and the
// NodeEndpoints collector for hints. Internal to policy/; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codec/messages/api_traits.h"
#include "policy/answer.h"
#include "policy/decision.h"
#include "policy/endpoint_resolver.h"
#include "policy/metadata_snapshot.h"
#include "policy/mode_resolver.h"

namespace epochgate::policy::detail {

/// The decision for (ti, pi), or nullptr when `d` does not describe this
/// request (a caller bug: then nothing is answered locally or injected).
inline const PartitionDecision* decision_at(const RequestDecision& d, size_t ti, size_t pi) {
  if (ti + 1 >= d.topic_start.size()) return nullptr;
  size_t at = d.topic_start[ti] + pi;
  if (at >= d.topic_start[ti + 1] || at >= d.partitions.size()) return nullptr;
  return &d.partitions[at];
}

inline bool answered_locally(const RequestDecision& d, size_t ti, size_t pi) {
  const PartitionDecision* pd = decision_at(d, ti, pi);
  return pd && pd->answered_locally();
}

inline std::string id_key(const codec::Uuid& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), id.size());
}

/// The key a topic is matched by between request and response: its TopicId
/// in versions that name topics by id, else its name.
template <class Shape>
std::string topic_key(const typename Shape::Topic& t, int16_t version) {
  return Shape::by_id(version) ? id_key(Shape::id(t)) : std::string(Shape::name(t));
}

/// Copies a request topic's identity (id or name, as `version` uses) into a
/// response topic.
template <class To, class From>
void copy_topic_identity(typename To::Topic& to, const typename From::Topic& from,
                         int16_t version) {
  if (From::by_id(version))
    To::set_id(to, From::id(from));
  else
    To::set_name(to, From::name(from));
}

/// The mode group of message M's API, from its schema row.
template <class M>
inline constexpr ApiGroup kGroupOf = api_group_of(codec::Api<M::kApiKey>::kGroup);

/// Collects NodeEndpoints for hinted leaders, each node once, with
/// epochgate's address. A node the resolver cannot place is never hinted.
template <class NodeEndpointT>
class EndpointCollector {
 public:
  EndpointCollector(const MetadataSnapshot& view, const EndpointResolver& resolver)
      : view_(view), resolver_(resolver) {}

  /// Seeds with endpoints already in a response (backfill).
  void seed(const std::vector<NodeEndpointT>& existing) {
    for (const auto& n : existing) known_[n.node_id] = true;
  }
  /// True when `node` has (or now gets) an entry.
  bool add(int32_t node) {
    auto it = known_.find(node);
    if (it != known_.end()) return it->second;
    std::optional<AdvertisedEndpoint> ep = resolver_.advertised(node);
    if (!ep || ep->host.empty() || ep->port <= 0) {
      known_[node] = false;
      return false;
    }
    NodeEndpointT n;
    n.node_id = node;
    n.host = ep->host;
    n.port = ep->port;
    if (const NodeInfo* info = view_.find_node(node)) n.rack = info->rack;
    added_.push_back(std::move(n));
    known_[node] = true;
    return true;
  }
  std::vector<NodeEndpointT>& added() { return added_; }

 private:
  const MetadataSnapshot& view_;
  const EndpointResolver& resolver_;
  std::unordered_map<int32_t, bool> known_;
  std::vector<NodeEndpointT> added_;
};

/// Tries to attach the decision's hint: true when the node has an endpoint.
template <class Collector>
bool attach_hint(const PartitionDecision& pd, Collector& nodes, AnswerStats* st) {
  if (!pd.has_hint() || pd.hint_epoch <= pd.request_epoch) return false;
  if (!nodes.add(pd.hint_leader)) {
    if (st) st->hints_dropped++;
    return false;
  }
  if (st) st->hints++;
  return true;
}

}  // namespace epochgate::policy::detail
