// policy/hint_builder.h: the one builder of KIP-951 hints (CurrentLeader on
// a partition, and a NodeEndpoints entry with epochgate's address for each
// node hinted), over the generated partition shapes: local answers,
// backfilled broker errors and partitions a reroute delivered all get their
// hints here. Must never: hint a node epochgate has no listener for, put
// an upstream address in NodeEndpoints, or do I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codec/messages/api_traits.h"
#include "policy/endpoint_resolver.h"
#include "policy/metadata_snapshot.h"

namespace epochgate::policy {

namespace detail {

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

}  // namespace detail

/// Hints for one response of type `Resp` (an API whose responses carry
/// KIP-951 hints): `hint()` per partition, then `finish()` once.
template <class Resp>
class HintBuilder {
  using R = codec::PartitionShape<Resp>;

 public:
  /// `view` gives a node's rack, `endpoints` epochgate's address for it.
  HintBuilder(const MetadataSnapshot& view, const EndpointResolver& endpoints)
      : nodes_(view, endpoints) {}

  /// Nodes `resp` already lists in NodeEndpoints are not added again.
  void seed(Resp& resp) {
    if (auto* existing = R::node_endpoints(resp)) nodes_.seed(*existing);
  }
  /// As seed(Resp&), for a NodeEndpoints list kept outside a response.
  void seed(const std::vector<typename R::NodeEndpoint>& existing) { nodes_.seed(existing); }
  /// Gives `node` a NodeEndpoints entry (for a hint the broker wrote
  /// itself); false when epochgate has no listener for it.
  bool add_node(int32_t node) { return nodes_.add(node); }
  /// Sets `p`'s CurrentLeader to (leader, epoch), with a NodeEndpoints
  /// entry for `leader`; false (`p` untouched) when epochgate has no
  /// listener for it.
  bool hint(typename R::Partition& p, int32_t leader, int32_t epoch) {
    if (!nodes_.add(leader)) return false;
    R::set_leader_hint(p, leader, epoch);
    return true;
  }
  /// Appends the entries added to `resp`'s NodeEndpoints (created when
  /// absent, only if there is one to add). Returns how many.
  size_t finish(Resp& resp) {
    if (nodes_.added().empty()) return 0;
    return finish(R::make_node_endpoints(resp));
  }
  /// As finish(Resp&), appending to a NodeEndpoints list kept outside a response.
  size_t finish(std::vector<typename R::NodeEndpoint>& eps) {
    auto& added = nodes_.added();
    for (auto& n : added) eps.push_back(std::move(n));
    const size_t n = added.size();
    added.clear();
    return n;
  }

 private:
  detail::EndpointCollector<typename R::NodeEndpoint> nodes_;
};

}  // namespace epochgate::policy
