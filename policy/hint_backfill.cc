// policy/hint_backfill.cc: KIP-951 hints added from the view to broker errors
// that lack them, and epochgate's NodeEndpoints entry for hints the broker
// gave itself; written once over the generated partition shapes of the
// responses that carry hints. Must never: hint from a stale, suspect or
// leaderless entry, hint the broker that just refused, hint an epoch not
// newer than the request's, or touch a topic whose mode is not enforce.
#include <algorithm>
#include <utility>

#include "policy/hint_builder.h"
#include "policy/shape_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

/// True when the view may hint for a broker error on this partition.
bool backfill_ok(const PartitionEntry* e, int16_t error, int32_t request_epoch,
                 const BackfillContext& ctx) {
  if (error != codec::kErrNotLeaderOrFollower && error != codec::kErrFencedLeaderEpoch) return false;
  if (!e || !e->hintable()) return false;
  if (e->age_ms(ctx.now_ms) > ctx.max_staleness_ms) return false;
  if (e->leader_epoch <= request_epoch) return false;
  // The broker that just refused leadership is not the leader to hint.
  if (error == codec::kErrNotLeaderOrFollower && ctx.target_node >= 0 && e->leader_id == ctx.target_node)
    return false;
  return true;
}

/// True when partition `p` carries a hint of its own or a leader error: the
/// only partitions backfill touches.
template <class R>
bool wants_backfill(const typename R::Partition& p) {
  int32_t id = -1, epoch = -1;
  if (R::leader_hint(p, id, epoch) && id >= 0 && epoch >= 0) return true;
  const int16_t error = R::error_code(p);
  return error == codec::kErrNotLeaderOrFollower || error == codec::kErrFencedLeaderEpoch;
}

/// True when backfill may touch this topic (its mode for `group` is enforce).
bool backfill_enforced(const TopicEntry& topic, ApiGroup group, const BackfillContext& ctx) {
  return ctx.modes == nullptr || ctx.modes->resolve(topic.name, group) == config::Mode::kEnforce;
}

/// The request's epoch for a partition of response topic `t`, so a hint is
/// strictly newer than it; -1 without a request or an epoch field.
template <class Resp>
int32_t request_epoch(const RequestOf<Resp>* req, const typename codec::PartitionShape<Resp>::Topic& t,
                      int32_t partition, int16_t version) {
  using Q = codec::PartitionShape<RequestOf<Resp>>;
  using R = codec::PartitionShape<Resp>;
  if constexpr (!Q::kHasEpoch) {
    return -1;
  } else {
    if (!req) return -1;
    const std::string key = detail::topic_key<R>(t, version);
    for (const auto& rt : Q::topics(*req)) {
      if (detail::topic_key<Q>(rt, version) != key) continue;
      for (const auto& rp : Q::partitions(rt))
        if (Q::partition(rp) == partition) return Q::epoch(rp);
    }
    return -1;
  }
}

}  // namespace

template <class Resp>
uint32_t backfill_hints(Resp& resp, int16_t version, const RequestOf<Resp>* req,
                        const BackfillContext& ctx) {
  using R = codec::PartitionShape<Resp>;
  if (!R::carries_hints(version)) return 0;
  constexpr ApiGroup group = detail::kGroupOf<Resp>;
  HintBuilder<Resp> hints(ctx.view, ctx.endpoints);
  hints.seed(resp);
  uint32_t added = 0;
  for (auto& t : R::topics(resp)) {
    // Most answers are all successes: their topics are not looked up.
    const auto& parts = R::partitions(t);
    if (std::none_of(parts.begin(), parts.end(), wants_backfill<R>)) continue;
    const TopicEntry* topic = R::by_id(version) ? ctx.view.find_topic(R::id(t))
                                                : ctx.view.find_topic(R::name(t));
    if (!topic || !backfill_enforced(*topic, group, ctx)) continue;
    for (auto& p : R::partitions(t)) {
      int32_t id = -1, epoch = -1;
      if (R::leader_hint(p, id, epoch) && id >= 0 && epoch >= 0) {
        hints.add_node(id);  // the broker's hint needs an endpoint too
        continue;
      }
      const int16_t error = R::error_code(p);
      if (error != codec::kErrNotLeaderOrFollower && error != codec::kErrFencedLeaderEpoch) continue;
      const PartitionEntry* e = topic->partition(R::partition(p));
      if (!backfill_ok(e, error, request_epoch<Resp>(req, t, R::partition(p), version), ctx) ||
          !hints.hint(p, e->leader_id, e->leader_epoch))
        continue;
      ++added;
    }
  }
  hints.finish(resp);
  return added;
}

#define EPOCHGATE_INSTANTIATE(Req, Resp)                                       \
  template uint32_t backfill_hints(codec::Resp&, int16_t, const codec::Req*, \
                                   const BackfillContext&);
EPOCHGATE_FOR_EACH_HINTED_API(EPOCHGATE_INSTANTIATE)
#undef EPOCHGATE_INSTANTIATE

bool version_carries_hints(int16_t api_key, int16_t version) {
  const codec::ApiInfo* a = codec::api_info(api_key);
  return a != nullptr && a->hints.contains(version);
}

}  // namespace epochgate::policy
