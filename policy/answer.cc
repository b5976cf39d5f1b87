// policy/answer.cc: local answers, rewritten requests, merged responses and
// hint backfill for every API the policy decides. Must never: write an
// upstream address into NodeEndpoints, hint without a NodeEndpoints entry for
// the hinted node, or reorder partitions against the request.
#include "policy/answer.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace epochgate::policy {
namespace {

/// The decision for (ti, pi), or nullptr when `d` does not describe this
/// request (a caller bug: then nothing is answered locally or injected).
const PartitionDecision* decision_at(const RequestDecision& d, size_t ti, size_t pi) {
  if (ti + 1 >= d.topic_start.size()) return nullptr;
  size_t at = d.topic_start[ti] + pi;
  if (at >= d.topic_start[ti + 1] || at >= d.partitions.size()) return nullptr;
  return &d.partitions[at];
}

bool local(const RequestDecision& d, size_t ti, size_t pi) {
  const PartitionDecision* pd = decision_at(d, ti, pi);
  return pd && pd->answered_locally();
}

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

std::string id_key(const codec::Uuid& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), id.size());
}

/// The request's topics and partition numbers, keyed like the response.
struct TopicLayout {
  std::string key;
  std::vector<int32_t> partitions;
};

/// Merges topic arrays (see merge_responses in answer.h).
template <class TopicT, class PartT, class KeyF, class PnumF>
std::vector<TopicT> merge_topics(const std::vector<TopicLayout>& layout, const RequestDecision& d,
                                 std::vector<TopicT>&& upstream, std::vector<TopicT>&& local_topics,
                                 std::vector<PartT> TopicT::*parts, KeyF key, PnumF pnum) {
  struct Pool {
    TopicT shell;
    std::vector<PartT> parts;
    std::vector<char> used;
    size_t cursor = 0;
    bool emitted = false;

    /// Moves out the first unused partition numbered `n` (nullopt if none).
    /// Responses usually follow the request's order: try the cursor first.
    std::optional<PartT> take(int32_t n, PnumF& pnum) {
      if (cursor < parts.size() && !used[cursor] && pnum(parts[cursor]) == n) {
        used[cursor] = 1;
        return std::move(parts[cursor++]);
      }
      for (size_t i = 0; i < parts.size(); ++i) {
        if (!used[i] && pnum(parts[i]) == n) {
          used[i] = 1;
          return std::move(parts[i]);
        }
      }
      return std::nullopt;
    }
  };
  auto make_pools = [&](std::vector<TopicT>& topics, std::vector<Pool>& pools,
                        std::unordered_map<std::string, size_t>& index) {
    pools.reserve(topics.size());
    for (auto& t : topics) {
      Pool p;
      p.parts = std::move(t.*parts);
      (t.*parts).clear();
      p.used.assign(p.parts.size(), 0);
      p.shell = std::move(t);
      index.emplace(key(p.shell), pools.size());
      pools.push_back(std::move(p));
    }
  };
  std::vector<Pool> up_pools, lo_pools;
  std::unordered_map<std::string, size_t> up_index, lo_index;
  make_pools(upstream, up_pools, up_index);
  make_pools(local_topics, lo_pools, lo_index);

  std::vector<TopicT> out;
  out.reserve(layout.size() + up_pools.size());
  for (size_t ti = 0; ti < layout.size(); ++ti) {
    Pool* up = nullptr;
    Pool* lo = nullptr;
    if (auto it = up_index.find(layout[ti].key);
        it != up_index.end() && !up_pools[it->second].emitted)
      up = &up_pools[it->second];
    if (auto it = lo_index.find(layout[ti].key);
        it != lo_index.end() && !lo_pools[it->second].emitted)
      lo = &lo_pools[it->second];
    if (!up && !lo) continue;
    TopicT t = up ? up->shell : lo->shell;
    std::vector<int32_t> answered_here;  // the broker's copy of these is dropped
    for (size_t pi = 0; pi < layout[ti].partitions.size(); ++pi) {
      const bool is_local = local(d, ti, pi);
      if (is_local) answered_here.push_back(layout[ti].partitions[pi]);
      Pool* src = is_local ? lo : up;
      if (!src) continue;
      if (auto p = src->take(layout[ti].partitions[pi], pnum)) (t.*parts).push_back(std::move(*p));
    }
    if (up) {
      for (size_t i = 0; i < up->parts.size(); ++i) {
        if (up->used[i]) continue;
        if (std::find(answered_here.begin(), answered_here.end(), pnum(up->parts[i])) !=
            answered_here.end())
          continue;
        (t.*parts).push_back(std::move(up->parts[i]));
      }
      up->emitted = true;
    }
    if (lo) lo->emitted = true;
    out.push_back(std::move(t));
  }
  for (auto& p : up_pools) {
    if (p.emitted) continue;
    TopicT t = std::move(p.shell);
    for (size_t i = 0; i < p.parts.size(); ++i)
      if (!p.used[i]) (t.*parts).push_back(std::move(p.parts[i]));
    out.push_back(std::move(t));
  }
  return out;
}

/// NodeEndpoints union by node id, local entries first (they carry
/// epochgate's address for sure).
template <class NodeEndpointT>
std::vector<NodeEndpointT> union_endpoints(std::vector<NodeEndpointT> local_eps,
                                           std::vector<NodeEndpointT> upstream_eps) {
  std::vector<NodeEndpointT> out = std::move(local_eps);
  for (auto& n : upstream_eps) {
    bool dup = false;
    for (const auto& m : out) dup = dup || m.node_id == n.node_id;
    if (!dup) out.push_back(std::move(n));
  }
  return out;
}

template <class NodeEndpointT>
std::optional<std::vector<NodeEndpointT>> union_tagged(
    std::optional<std::vector<NodeEndpointT>> a, std::optional<std::vector<NodeEndpointT>> b) {
  if (!a && !b) return std::nullopt;
  return union_endpoints(a ? std::move(*a) : std::vector<NodeEndpointT>{},
                         b ? std::move(*b) : std::vector<NodeEndpointT>{});
}

/// Keeps the partitions the decision does not answer locally, writes
/// injected epochs through `inject`, drops topics that became empty.
template <class TopicT, class PartT, class InjectF>
void filter_topics(std::vector<TopicT>& topics, std::vector<PartT> TopicT::*parts,
                   const RequestDecision& d, InjectF inject) {
  std::vector<TopicT> kept;
  kept.reserve(topics.size());
  for (size_t ti = 0; ti < topics.size(); ++ti) {
    TopicT& t = topics[ti];
    std::vector<PartT>& ps = t.*parts;
    const bool was_empty = ps.empty();
    std::vector<PartT> keep;
    keep.reserve(ps.size());
    for (size_t pi = 0; pi < ps.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (pd && pd->answered_locally()) continue;
      if (pd && pd->injected()) inject(ps[pi], pd->view_epoch);
      keep.push_back(std::move(ps[pi]));
    }
    if (keep.empty() && !was_empty) continue;
    ps = std::move(keep);
    kept.push_back(std::move(t));
  }
  topics = std::move(kept);
}

constexpr auto kNoInject = [](auto&, int32_t) {};

/// True when the view may hint for a broker error on this partition.
bool backfill_ok(const PartitionEntry* e, int16_t error, int32_t request_epoch,
                 const BackfillContext& ctx) {
  if (error != kErrNotLeaderOrFollower && error != kErrFencedLeaderEpoch) return false;
  if (!e || !e->hintable()) return false;
  if (e->age_ms(ctx.now_ms) > ctx.max_staleness_ms) return false;
  if (e->leader_epoch <= request_epoch) return false;
  // The broker that just refused leadership is not the leader to hint.
  if (error == kErrNotLeaderOrFollower && ctx.target_node >= 0 && e->leader_id == ctx.target_node)
    return false;
  return true;
}

/// True when backfill may touch this topic (its mode for `group` is enforce).
bool backfill_enforced(const TopicEntry& topic, ApiGroup group, const BackfillContext& ctx) {
  return ctx.modes == nullptr || ctx.modes->resolve(topic.name, group) == config::Mode::kEnforce;
}

}  // namespace

bool version_carries_hints(int16_t api_key, int16_t version) {
  switch (api_key) {
    case codec::kProduce:
      return version >= 10;
    case codec::kFetch:
      return version >= 16;
    case codec::kShareFetch:
    case codec::kShareAcknowledge:
      return true;
    default:
      return false;
  }
}

// ----------------------------------------------------------------- Produce

codec::ProduceResponse build_local_response(const codec::ProduceRequest& req, int16_t version,
                                            const RequestDecision& d, const MetadataSnapshot& view,
                                            const EndpointResolver& endpoints, AnswerStats* st) {
  using R = codec::ProduceResponse;
  R r;
  const bool hints = version_carries_hints(codec::kProduce, version);
  EndpointCollector<R::NodeEndpoint> nodes(view, endpoints);
  for (size_t ti = 0; ti < req.topic_data.size(); ++ti) {
    const auto& t = req.topic_data[ti];
    R::TopicProduceResponse* out = nullptr;
    for (size_t pi = 0; pi < t.partition_data.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &r.responses.emplace_back();
        if (version >= 13)
          out->topic_id = t.topic_id;
        else
          out->name = t.name;
      }
      auto& p = out->partition_responses.emplace_back();
      p.index = pd->partition;
      p.error_code = pd->error_code;
      p.base_offset = -1;
      p.log_append_time_ms = -1;
      p.log_start_offset = -1;
      if (hints && attach_hint(*pd, nodes, st))
        p.current_leader = R::LeaderIdAndEpoch{pd->hint_leader, pd->hint_epoch, {}};
    }
  }
  if (hints && !nodes.added().empty()) r.node_endpoints = std::move(nodes.added());
  return r;
}

codec::ProduceRequest rewrite_request(const codec::ProduceRequest& req, int16_t version,
                                      const RequestDecision& d) {
  codec::ProduceRequest out = req;
  filter_topics(out.topic_data, &codec::ProduceRequest::TopicProduceData::partition_data, d,
                kNoInject);
  return out;
}

namespace {

template <class Topics, class NameF>
std::vector<TopicLayout> layout_of(const Topics& topics, NameF key_and_parts) {
  std::vector<TopicLayout> l;
  l.reserve(topics.size());
  for (const auto& t : topics) l.push_back(key_and_parts(t));
  return l;
}

}  // namespace

codec::ProduceResponse merge_responses(const codec::ProduceRequest& req, int16_t version,
                                       const RequestDecision& d, codec::ProduceResponse upstream,
                                       codec::ProduceResponse local_resp) {
  using R = codec::ProduceResponse;
  const bool ids = version >= 13;
  auto layout = layout_of(req.topic_data, [&](const auto& t) {
    TopicLayout l{ids ? id_key(t.topic_id) : t.name, {}};
    for (const auto& p : t.partition_data) l.partitions.push_back(p.index);
    return l;
  });
  R out;
  out.throttle_time_ms = std::max(upstream.throttle_time_ms, local_resp.throttle_time_ms);
  out.unknown_tagged_fields = upstream.unknown_tagged_fields;
  if (version >= 10)
    out.node_endpoints =
        union_tagged(std::move(local_resp.node_endpoints), std::move(upstream.node_endpoints));
  out.responses = merge_topics(
      layout, d, std::move(upstream.responses), std::move(local_resp.responses),
      &R::TopicProduceResponse::partition_responses,
      [&](const R::TopicProduceResponse& t) { return ids ? id_key(t.topic_id) : t.name; },
      [](const R::PartitionProduceResponse& p) { return p.index; });
  return out;
}

uint32_t backfill_hints(codec::ProduceResponse& resp, int16_t version, const BackfillContext& ctx) {
  using R = codec::ProduceResponse;
  if (!version_carries_hints(codec::kProduce, version)) return 0;
  EndpointCollector<R::NodeEndpoint> nodes(ctx.view, ctx.endpoints);
  if (resp.node_endpoints) nodes.seed(*resp.node_endpoints);
  uint32_t added = 0;
  for (auto& t : resp.responses) {
    const TopicEntry* topic =
        version >= 13 ? ctx.view.find_topic(t.topic_id) : ctx.view.find_topic(t.name);
    if (!topic || !backfill_enforced(*topic, ApiGroup::kProduce, ctx)) continue;
    for (auto& p : t.partition_responses) {
      if (p.current_leader && p.current_leader->leader_id >= 0 &&
          p.current_leader->leader_epoch >= 0) {
        nodes.add(p.current_leader->leader_id);  // the broker's hint needs an endpoint too
        continue;
      }
      const PartitionEntry* e = topic->partition(p.index);
      if (!backfill_ok(e, p.error_code, -1, ctx) || !nodes.add(e->leader_id)) continue;
      p.current_leader = R::LeaderIdAndEpoch{e->leader_id, e->leader_epoch, {}};
      ++added;
    }
  }
  if (!nodes.added().empty()) {
    if (!resp.node_endpoints) resp.node_endpoints.emplace();
    for (auto& n : nodes.added()) resp.node_endpoints->push_back(std::move(n));
  }
  return added;
}

// ------------------------------------------------------------------- Fetch

codec::FetchResponse build_local_response(const codec::FetchRequest& req, int16_t version,
                                          const RequestDecision& d, const MetadataSnapshot& view,
                                          const EndpointResolver& endpoints, AnswerStats* st) {
  using R = codec::FetchResponse;
  R r;
  r.session_id = 0;
  const bool hints = version_carries_hints(codec::kFetch, version);
  EndpointCollector<R::NodeEndpoint> nodes(view, endpoints);
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    R::FetchableTopicResponse* out = nullptr;
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &r.responses.emplace_back();
        if (version >= 13)
          out->topic_id = t.topic_id;
        else
          out->topic = t.topic;
      }
      auto& p = out->partitions.emplace_back();
      p.partition_index = pd->partition;
      p.error_code = pd->error_code;
      p.high_watermark = -1;
      p.last_stable_offset = -1;
      p.log_start_offset = -1;
      p.preferred_read_replica = -1;
      p.records = codec::Bytes{};  // empty, not null, as a broker sends for an error
      if (hints && attach_hint(*pd, nodes, st))
        p.current_leader = R::LeaderIdAndEpoch{pd->hint_leader, pd->hint_epoch, {}};
    }
  }
  if (hints && !nodes.added().empty()) r.node_endpoints = std::move(nodes.added());
  return r;
}

codec::FetchRequest rewrite_request(const codec::FetchRequest& req, int16_t version,
                                    const RequestDecision& d) {
  codec::FetchRequest out = req;
  filter_topics(
      out.topics, &codec::FetchRequest::FetchTopic::partitions, d,
      [](codec::FetchRequest::FetchPartition& p, int32_t e) { p.current_leader_epoch = e; });
  return out;
}

codec::FetchResponse merge_responses(const codec::FetchRequest& req, int16_t version,
                                     const RequestDecision& d, codec::FetchResponse upstream,
                                     codec::FetchResponse local_resp) {
  using R = codec::FetchResponse;
  if (upstream.error_code != kErrNone) {
    upstream.throttle_time_ms = std::max(upstream.throttle_time_ms, local_resp.throttle_time_ms);
    return upstream;
  }
  const bool ids = version >= 13;
  auto layout = layout_of(req.topics, [&](const auto& t) {
    TopicLayout l{ids ? id_key(t.topic_id) : t.topic, {}};
    for (const auto& p : t.partitions) l.partitions.push_back(p.partition);
    return l;
  });
  R out;
  out.throttle_time_ms = std::max(upstream.throttle_time_ms, local_resp.throttle_time_ms);
  out.error_code = upstream.error_code;
  out.session_id = upstream.session_id;
  out.unknown_tagged_fields = upstream.unknown_tagged_fields;
  if (version >= 16)
    out.node_endpoints =
        union_tagged(std::move(local_resp.node_endpoints), std::move(upstream.node_endpoints));
  out.responses = merge_topics(
      layout, d, std::move(upstream.responses), std::move(local_resp.responses),
      &R::FetchableTopicResponse::partitions,
      [&](const R::FetchableTopicResponse& t) { return ids ? id_key(t.topic_id) : t.topic; },
      [](const R::PartitionData& p) { return p.partition_index; });
  return out;
}

uint32_t backfill_hints(codec::FetchResponse& resp, int16_t version, const codec::FetchRequest* req,
                        const BackfillContext& ctx) {
  using R = codec::FetchResponse;
  if (!version_carries_hints(codec::kFetch, version)) return 0;
  const bool ids = version >= 13;
  // The request epoch of a partition, so a hint is strictly newer than it.
  auto request_epoch = [&](const R::FetchableTopicResponse& t, int32_t partition) -> int32_t {
    if (!req) return -1;
    for (const auto& rt : req->topics) {
      if (ids ? rt.topic_id != t.topic_id : rt.topic != t.topic) continue;
      for (const auto& rp : rt.partitions)
        if (rp.partition == partition) return rp.current_leader_epoch;
    }
    return -1;
  };
  EndpointCollector<R::NodeEndpoint> nodes(ctx.view, ctx.endpoints);
  if (resp.node_endpoints) nodes.seed(*resp.node_endpoints);
  uint32_t added = 0;
  for (auto& t : resp.responses) {
    const TopicEntry* topic = ids ? ctx.view.find_topic(t.topic_id) : ctx.view.find_topic(t.topic);
    if (!topic || !backfill_enforced(*topic, ApiGroup::kFetch, ctx)) continue;
    for (auto& p : t.partitions) {
      if (p.current_leader && p.current_leader->leader_id >= 0 &&
          p.current_leader->leader_epoch >= 0) {
        nodes.add(p.current_leader->leader_id);  // the broker's hint needs an endpoint too
        continue;
      }
      if (p.error_code != kErrNotLeaderOrFollower && p.error_code != kErrFencedLeaderEpoch)
        continue;
      const PartitionEntry* e = topic->partition(p.partition_index);
      if (!backfill_ok(e, p.error_code, request_epoch(t, p.partition_index), ctx) ||
          !nodes.add(e->leader_id))
        continue;
      p.current_leader = R::LeaderIdAndEpoch{e->leader_id, e->leader_epoch, {}};
      ++added;
    }
  }
  if (!nodes.added().empty()) {
    if (!resp.node_endpoints) resp.node_endpoints.emplace();
    for (auto& n : nodes.added()) resp.node_endpoints->push_back(std::move(n));
  }
  return added;
}

// ------------------------------------------------------------- ListOffsets

codec::ListOffsetsResponse build_local_response(const codec::ListOffsetsRequest& req,
                                                int16_t version, const RequestDecision& d,
                                                const MetadataSnapshot&, const EndpointResolver&,
                                                AnswerStats*) {
  using R = codec::ListOffsetsResponse;
  R r;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    R::ListOffsetsTopicResponse* out = nullptr;
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &r.topics.emplace_back();
        out->name = t.name;
      }
      auto& p = out->partitions.emplace_back();
      p.partition_index = pd->partition;
      p.error_code = pd->error_code;
      p.timestamp = -1;
      p.offset = -1;
      p.leader_epoch = -1;
    }
  }
  return r;
}

codec::ListOffsetsRequest rewrite_request(const codec::ListOffsetsRequest& req, int16_t version,
                                          const RequestDecision& d) {
  codec::ListOffsetsRequest out = req;
  filter_topics(out.topics, &codec::ListOffsetsRequest::ListOffsetsTopic::partitions, d,
                [](codec::ListOffsetsRequest::ListOffsetsPartition& p, int32_t e) {
                  p.current_leader_epoch = e;
                });
  return out;
}

codec::ListOffsetsResponse merge_responses(const codec::ListOffsetsRequest& req, int16_t version,
                                           const RequestDecision& d,
                                           codec::ListOffsetsResponse upstream,
                                           codec::ListOffsetsResponse local_resp) {
  using R = codec::ListOffsetsResponse;
  auto layout = layout_of(req.topics, [&](const auto& t) {
    TopicLayout l{t.name, {}};
    for (const auto& p : t.partitions) l.partitions.push_back(p.partition_index);
    return l;
  });
  R out;
  out.throttle_time_ms = std::max(upstream.throttle_time_ms, local_resp.throttle_time_ms);
  out.unknown_tagged_fields = upstream.unknown_tagged_fields;
  out.topics = merge_topics(
      layout, d, std::move(upstream.topics), std::move(local_resp.topics),
      &R::ListOffsetsTopicResponse::partitions,
      [](const R::ListOffsetsTopicResponse& t) { return t.name; },
      [](const R::ListOffsetsPartitionResponse& p) { return p.partition_index; });
  return out;
}

// ---------------------------------------------------- OffsetForLeaderEpoch

codec::OffsetForLeaderEpochResponse build_local_response(
    const codec::OffsetForLeaderEpochRequest& req, int16_t version, const RequestDecision& d,
    const MetadataSnapshot&, const EndpointResolver&, AnswerStats*) {
  using R = codec::OffsetForLeaderEpochResponse;
  R r;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    R::OffsetForLeaderTopicResult* out = nullptr;
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &r.topics.emplace_back();
        out->topic = t.topic;
      }
      auto& p = out->partitions.emplace_back();
      p.error_code = pd->error_code;
      p.partition = pd->partition;
      p.leader_epoch = -1;
      p.end_offset = -1;
    }
  }
  return r;
}

codec::OffsetForLeaderEpochRequest rewrite_request(const codec::OffsetForLeaderEpochRequest& req,
                                                   int16_t version, const RequestDecision& d) {
  codec::OffsetForLeaderEpochRequest out = req;
  filter_topics(out.topics, &codec::OffsetForLeaderEpochRequest::OffsetForLeaderTopic::partitions,
                d, [](codec::OffsetForLeaderEpochRequest::OffsetForLeaderPartition& p, int32_t e) {
                  p.current_leader_epoch = e;
                });
  return out;
}

codec::OffsetForLeaderEpochResponse merge_responses(
    const codec::OffsetForLeaderEpochRequest& req, int16_t version, const RequestDecision& d,
    codec::OffsetForLeaderEpochResponse upstream, codec::OffsetForLeaderEpochResponse local_resp) {
  using R = codec::OffsetForLeaderEpochResponse;
  auto layout = layout_of(req.topics, [&](const auto& t) {
    TopicLayout l{t.topic, {}};
    for (const auto& p : t.partitions) l.partitions.push_back(p.partition);
    return l;
  });
  R out;
  out.throttle_time_ms = std::max(upstream.throttle_time_ms, local_resp.throttle_time_ms);
  out.unknown_tagged_fields = upstream.unknown_tagged_fields;
  out.topics = merge_topics(
      layout, d, std::move(upstream.topics), std::move(local_resp.topics),
      &R::OffsetForLeaderTopicResult::partitions,
      [](const R::OffsetForLeaderTopicResult& t) { return t.topic; },
      [](const R::EpochEndOffset& p) { return p.partition; });
  return out;
}

// ------------------------------------------------------- ShareFetch / Ack

codec::ShareFetchResponse build_local_response(const codec::ShareFetchRequest& req, int16_t version,
                                               const RequestDecision& d,
                                               const MetadataSnapshot& view,
                                               const EndpointResolver& endpoints, AnswerStats* st) {
  using R = codec::ShareFetchResponse;
  R r;
  EndpointCollector<R::NodeEndpoint> nodes(view, endpoints);
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    R::ShareFetchableTopicResponse* out = nullptr;
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &r.responses.emplace_back();
        out->topic_id = t.topic_id;
      }
      auto& p = out->partitions.emplace_back();
      p.partition_index = pd->partition;
      p.error_code = pd->error_code;
      if (!t.partitions[pi].acknowledgement_batches.empty())
        p.acknowledge_error_code = pd->error_code;
      p.current_leader = R::LeaderIdAndEpoch{-1, -1, {}};
      if (attach_hint(*pd, nodes, st))
        p.current_leader = R::LeaderIdAndEpoch{pd->hint_leader, pd->hint_epoch, {}};
      p.records = codec::Bytes{};
    }
  }
  r.node_endpoints = std::move(nodes.added());
  return r;
}

codec::ShareAcknowledgeResponse build_local_response(const codec::ShareAcknowledgeRequest& req,
                                                     int16_t version, const RequestDecision& d,
                                                     const MetadataSnapshot& view,
                                                     const EndpointResolver& endpoints,
                                                     AnswerStats* st) {
  using R = codec::ShareAcknowledgeResponse;
  R r;
  EndpointCollector<R::NodeEndpoint> nodes(view, endpoints);
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    R::ShareAcknowledgeTopicResponse* out = nullptr;
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &r.responses.emplace_back();
        out->topic_id = t.topic_id;
      }
      auto& p = out->partitions.emplace_back();
      p.partition_index = pd->partition;
      p.error_code = pd->error_code;
      p.current_leader = R::LeaderIdAndEpoch{-1, -1, {}};
      if (attach_hint(*pd, nodes, st))
        p.current_leader = R::LeaderIdAndEpoch{pd->hint_leader, pd->hint_epoch, {}};
    }
  }
  r.node_endpoints = std::move(nodes.added());
  return r;
}

codec::ShareFetchRequest rewrite_request(const codec::ShareFetchRequest& req, int16_t version,
                                         const RequestDecision& d) {
  codec::ShareFetchRequest out = req;
  filter_topics(out.topics, &codec::ShareFetchRequest::FetchTopic::partitions, d, kNoInject);
  return out;
}

codec::ShareAcknowledgeRequest rewrite_request(const codec::ShareAcknowledgeRequest& req,
                                               int16_t version, const RequestDecision& d) {
  codec::ShareAcknowledgeRequest out = req;
  filter_topics(out.topics, &codec::ShareAcknowledgeRequest::AcknowledgeTopic::partitions, d,
                kNoInject);
  return out;
}

namespace {

template <class Req, class Resp, class TopicT>
Resp merge_share(const Req& req, const RequestDecision& d, Resp upstream, Resp local_resp,
                 std::vector<TopicT> Resp::*topics_member) {
  if (upstream.error_code != kErrNone) {
    upstream.throttle_time_ms = std::max(upstream.throttle_time_ms, local_resp.throttle_time_ms);
    return upstream;
  }
  auto layout = layout_of(req.topics, [&](const auto& t) {
    TopicLayout l{id_key(t.topic_id), {}};
    for (const auto& p : t.partitions) l.partitions.push_back(p.partition_index);
    return l;
  });
  Resp out = std::move(upstream);  // keeps error message, lock timeout, tagged fields
  out.throttle_time_ms = std::max(out.throttle_time_ms, local_resp.throttle_time_ms);
  out.node_endpoints =
      union_endpoints(std::move(local_resp.node_endpoints), std::move(out.node_endpoints));
  using PartT =
      typename std::remove_reference_t<decltype(std::declval<TopicT&>().partitions)>::value_type;
  out.*topics_member = merge_topics(
      layout, d, std::move(out.*topics_member), std::move(local_resp.*topics_member),
      &TopicT::partitions, [](const TopicT& t) { return id_key(t.topic_id); },
      [](const PartT& p) { return p.partition_index; });
  return out;
}

}  // namespace

codec::ShareFetchResponse merge_responses(const codec::ShareFetchRequest& req, int16_t version,
                                          const RequestDecision& d,
                                          codec::ShareFetchResponse upstream,
                                          codec::ShareFetchResponse local_resp) {
  return merge_share(req, d, std::move(upstream), std::move(local_resp),
                     &codec::ShareFetchResponse::responses);
}

codec::ShareAcknowledgeResponse merge_responses(const codec::ShareAcknowledgeRequest& req,
                                                int16_t version, const RequestDecision& d,
                                                codec::ShareAcknowledgeResponse upstream,
                                                codec::ShareAcknowledgeResponse local_resp) {
  return merge_share(req, d, std::move(upstream), std::move(local_resp),
                     &codec::ShareAcknowledgeResponse::responses);
}

namespace {

template <class Resp>
uint32_t backfill_share(Resp& resp, const BackfillContext& ctx) {
  using NodeEndpointT = typename decltype(resp.node_endpoints)::value_type;
  EndpointCollector<NodeEndpointT> nodes(ctx.view, ctx.endpoints);
  nodes.seed(resp.node_endpoints);
  uint32_t added = 0;
  for (auto& t : resp.responses) {
    const TopicEntry* topic = ctx.view.find_topic(t.topic_id);
    if (!topic || !backfill_enforced(*topic, ApiGroup::kShare, ctx)) continue;
    for (auto& p : t.partitions) {
      if (p.current_leader.leader_id >= 0 && p.current_leader.leader_epoch >= 0) {
        nodes.add(p.current_leader.leader_id);  // the broker's hint needs an endpoint too
        continue;
      }
      const PartitionEntry* e = topic->partition(p.partition_index);
      if (!backfill_ok(e, p.error_code, -1, ctx) || !nodes.add(e->leader_id)) continue;
      p.current_leader.leader_id = e->leader_id;
      p.current_leader.leader_epoch = e->leader_epoch;
      ++added;
    }
  }
  for (auto& n : nodes.added()) resp.node_endpoints.push_back(std::move(n));
  return added;
}

}  // namespace

uint32_t backfill_hints(codec::ShareFetchResponse& resp, int16_t version,
                        const BackfillContext& ctx) {
  return backfill_share(resp, ctx);
}

uint32_t backfill_hints(codec::ShareAcknowledgeResponse& resp, int16_t version,
                        const BackfillContext& ctx) {
  return backfill_share(resp, ctx);
}

// --------------------------------------------------------------- Persister

codec::ReadShareGroupStateResponse build_local_response(
    const codec::ReadShareGroupStateRequest& req, int16_t version, const RequestDecision& d,
    const MetadataSnapshot&, const EndpointResolver&, AnswerStats*) {
  using R = codec::ReadShareGroupStateResponse;
  R r;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    R::ReadStateResult* out = nullptr;
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &r.results.emplace_back();
        out->topic_id = t.topic_id;
      }
      auto& p = out->partitions.emplace_back();
      p.partition = pd->partition;
      p.error_code = pd->error_code;
      p.state_epoch = -1;
      p.start_offset = -1;
    }
  }
  return r;
}

codec::WriteShareGroupStateResponse build_local_response(
    const codec::WriteShareGroupStateRequest& req, int16_t version, const RequestDecision& d,
    const MetadataSnapshot&, const EndpointResolver&, AnswerStats*) {
  using R = codec::WriteShareGroupStateResponse;
  R r;
  for (size_t ti = 0; ti < req.topics.size(); ++ti) {
    const auto& t = req.topics[ti];
    R::WriteStateResult* out = nullptr;
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &r.results.emplace_back();
        out->topic_id = t.topic_id;
      }
      auto& p = out->partitions.emplace_back();
      p.partition = pd->partition;
      p.error_code = pd->error_code;
    }
  }
  return r;
}

codec::ReadShareGroupStateRequest rewrite_request(const codec::ReadShareGroupStateRequest& req,
                                                  int16_t version, const RequestDecision& d) {
  codec::ReadShareGroupStateRequest out = req;
  filter_topics(out.topics, &codec::ReadShareGroupStateRequest::ReadStateData::partitions, d,
                kNoInject);
  return out;
}

codec::WriteShareGroupStateRequest rewrite_request(const codec::WriteShareGroupStateRequest& req,
                                                   int16_t version, const RequestDecision& d) {
  codec::WriteShareGroupStateRequest out = req;
  filter_topics(out.topics, &codec::WriteShareGroupStateRequest::WriteStateData::partitions, d,
                kNoInject);
  return out;
}

namespace {

template <class Req, class Resp, class TopicT>
Resp merge_persister(const Req& req, const RequestDecision& d, Resp upstream, Resp local_resp) {
  auto layout = layout_of(req.topics, [&](const auto& t) {
    TopicLayout l{id_key(t.topic_id), {}};
    for (const auto& p : t.partitions) l.partitions.push_back(p.partition);
    return l;
  });
  Resp out = std::move(upstream);
  using PartT =
      typename std::remove_reference_t<decltype(std::declval<TopicT&>().partitions)>::value_type;
  out.results = merge_topics(
      layout, d, std::move(out.results), std::move(local_resp.results), &TopicT::partitions,
      [](const TopicT& t) { return id_key(t.topic_id); },
      [](const PartT& p) { return p.partition; });
  return out;
}

}  // namespace

codec::ReadShareGroupStateResponse merge_responses(const codec::ReadShareGroupStateRequest& req,
                                                   int16_t version, const RequestDecision& d,
                                                   codec::ReadShareGroupStateResponse upstream,
                                                   codec::ReadShareGroupStateResponse local_resp) {
  return merge_persister<codec::ReadShareGroupStateRequest, codec::ReadShareGroupStateResponse,
                         codec::ReadShareGroupStateResponse::ReadStateResult>(
      req, d, std::move(upstream), std::move(local_resp));
}

codec::WriteShareGroupStateResponse merge_responses(
    const codec::WriteShareGroupStateRequest& req, int16_t version, const RequestDecision& d,
    codec::WriteShareGroupStateResponse upstream, codec::WriteShareGroupStateResponse local_resp) {
  return merge_persister<codec::WriteShareGroupStateRequest, codec::WriteShareGroupStateResponse,
                         codec::WriteShareGroupStateResponse::WriteStateResult>(
      req, d, std::move(upstream), std::move(local_resp));
}

}  // namespace epochgate::policy
