// policy/response_merge.cc: one response from a split request's two halves
// (the broker's and the local answer), written once over the generated
// partition shapes. Must never: reorder partitions against the request, drop
// a partition the broker returned unless the local half answers it, or keep
// an upstream NodeEndpoints entry over epochgate's own for the same node.
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/shape_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

/// The request's topics and partition numbers, keyed like the response.
struct TopicLayout {
  std::string key;
  std::vector<int32_t> partitions;
};

template <class Q>
std::vector<TopicLayout> layout_of(const typename Q::Message& req, int16_t version) {
  std::vector<TopicLayout> l;
  l.reserve(Q::topics(req).size());
  for (const auto& t : Q::topics(req)) {
    TopicLayout& tl = l.emplace_back();
    tl.key = detail::topic_key<Q>(t, version);
    for (const auto& p : Q::partitions(t)) tl.partitions.push_back(Q::partition(p));
  }
  return l;
}

/// One response topic's partitions, taken out one by one.
template <class R>
struct Pool {
  typename R::Topic shell;
  std::vector<typename R::Partition> parts;
  std::vector<char> used;
  size_t cursor = 0;
  bool emitted = false;

  /// Moves out the first unused partition numbered `n` (nullopt if none).
  /// Responses usually follow the request's order: try the cursor first.
  std::optional<typename R::Partition> take(int32_t n) {
    if (cursor < parts.size() && !used[cursor] && R::partition(parts[cursor]) == n) {
      used[cursor] = 1;
      return std::move(parts[cursor++]);
    }
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!used[i] && R::partition(parts[i]) == n) {
        used[i] = 1;
        return std::move(parts[i]);
      }
    }
    return std::nullopt;
  }
};

template <class R>
void make_pools(std::vector<typename R::Topic>& topics, int16_t version,
                std::vector<Pool<R>>& pools, std::unordered_map<std::string, size_t>& index) {
  pools.reserve(topics.size());
  for (auto& t : topics) {
    Pool<R> p;
    p.parts = std::move(R::partitions(t));
    R::partitions(t).clear();
    p.used.assign(p.parts.size(), 0);
    p.shell = std::move(t);
    index.emplace(detail::topic_key<R>(p.shell, version), pools.size());
    pools.push_back(std::move(p));
  }
}

template <class R>
std::vector<typename R::Topic> merge_topics(const std::vector<TopicLayout>& layout,
                                            const RequestDecision& d, int16_t version,
                                            std::vector<typename R::Topic>&& upstream,
                                            std::vector<typename R::Topic>&& local_topics) {
  std::vector<Pool<R>> up_pools, lo_pools;
  std::unordered_map<std::string, size_t> up_index, lo_index;
  make_pools<R>(upstream, version, up_pools, up_index);
  make_pools<R>(local_topics, version, lo_pools, lo_index);

  std::vector<typename R::Topic> out;
  out.reserve(layout.size() + up_pools.size());
  for (size_t ti = 0; ti < layout.size(); ++ti) {
    Pool<R>* up = nullptr;
    Pool<R>* lo = nullptr;
    if (auto it = up_index.find(layout[ti].key);
        it != up_index.end() && !up_pools[it->second].emitted)
      up = &up_pools[it->second];
    if (auto it = lo_index.find(layout[ti].key);
        it != lo_index.end() && !lo_pools[it->second].emitted)
      lo = &lo_pools[it->second];
    if (!up && !lo) continue;
    typename R::Topic t = up ? up->shell : lo->shell;
    auto& tparts = R::partitions(t);
    std::vector<int32_t> answered_here;  // the broker's copy of these is dropped
    for (size_t pi = 0; pi < layout[ti].partitions.size(); ++pi) {
      const bool is_local = detail::answered_locally(d, ti, pi);
      if (is_local) answered_here.push_back(layout[ti].partitions[pi]);
      Pool<R>* src = is_local ? lo : up;
      if (!src) continue;
      if (auto p = src->take(layout[ti].partitions[pi])) tparts.push_back(std::move(*p));
    }
    if (up) {
      for (size_t i = 0; i < up->parts.size(); ++i) {
        if (up->used[i]) continue;
        if (std::find(answered_here.begin(), answered_here.end(),
                      R::partition(up->parts[i])) != answered_here.end())
          continue;
        tparts.push_back(std::move(up->parts[i]));
      }
      up->emitted = true;
    }
    if (lo) lo->emitted = true;
    out.push_back(std::move(t));
  }
  for (auto& p : up_pools) {
    if (p.emitted) continue;
    typename R::Topic t = std::move(p.shell);
    for (size_t i = 0; i < p.parts.size(); ++i)
      if (!p.used[i]) R::partitions(t).push_back(std::move(p.parts[i]));
    out.push_back(std::move(t));
  }
  return out;
}

/// NodeEndpoints union by node id, local entries first (they carry
/// epochgate's address for sure). Absent on both sides (tagged): stays absent.
template <class R>
void union_endpoints(typename R::Message& out, typename R::Message& local) {
  auto* lo = R::node_endpoints(local);
  auto* up = R::node_endpoints(out);
  if (!lo && !up) return;
  std::vector<typename R::NodeEndpoint> merged;
  if (lo) merged = std::move(*lo);
  if (up) {
    for (auto& n : *up) {
      bool dup = false;
      for (const auto& m : merged) dup = dup || m.node_id == n.node_id;
      if (!dup) merged.push_back(std::move(n));
    }
  }
  R::make_node_endpoints(out) = std::move(merged);
}

}  // namespace

template <class Req>
ResponseOf<Req> merge_responses(const Req& req, int16_t version, const RequestDecision& d,
                                ResponseOf<Req> upstream, ResponseOf<Req> local_resp) {
  using Q = codec::PartitionShape<Req>;
  using R = codec::PartitionShape<ResponseOf<Req>>;
  ResponseOf<Req> out = std::move(upstream);  // keeps top-level fields and tagged fields
  R::set_throttle(out, std::max(R::throttle(out), R::throttle(local_resp)));
  if (R::kHasTopError && R::top_error(out) != codec::kErrNone) return out;
  if constexpr (R::kHasHints) union_endpoints<R>(out, local_resp);
  auto layout = layout_of<Q>(req, version);
  R::topics(out) = merge_topics<R>(layout, d, version, std::move(R::topics(out)),
                                   std::move(R::topics(local_resp)));
  return out;
}

#define EPOCHGATE_INSTANTIATE(Req, Resp)                                              \
  template codec::Resp merge_responses(const codec::Req&, int16_t, const RequestDecision&, \
                                       codec::Resp, codec::Resp);
EPOCHGATE_FOR_EACH_DECIDED_API(EPOCHGATE_INSTANTIATE)
#undef EPOCHGATE_INSTANTIATE

}  // namespace epochgate::policy
