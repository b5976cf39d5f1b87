// policy/request_rewrite.cc: the request forwarded after a decision, written
// once over the generated partition shapes: partitions answered locally
// removed, the view's epoch written where the decision injects. Must never:
// copy record data, reorder partitions, or write an epoch into a field the
// schema does not mark writable (currentLeaderEpoch).
#include <utility>
#include <vector>

#include "policy/shape_support.h"

namespace epochgate::policy {

template <class Req>
Req rewrite_request(const Req& req, int16_t, const RequestDecision& d) {
  using Q = codec::PartitionShape<Req>;
  Req out = req;
  auto& topics = Q::topics(out);
  std::vector<typename Q::Topic> kept;
  kept.reserve(topics.size());
  for (size_t ti = 0; ti < topics.size(); ++ti) {
    auto& t = topics[ti];
    auto& ps = Q::partitions(t);
    const bool was_empty = ps.empty();
    std::vector<typename Q::Partition> keep;
    keep.reserve(ps.size());
    for (size_t pi = 0; pi < ps.size(); ++pi) {
      const PartitionDecision* pd = detail::decision_at(d, ti, pi);
      if (pd && pd->answered_locally()) continue;
      if constexpr (Q::kEpochWritable) {
        if (pd && pd->injected()) Q::set_epoch(ps[pi], pd->view_epoch);
      }
      keep.push_back(std::move(ps[pi]));
    }
    if (keep.empty() && !was_empty) continue;
    ps = std::move(keep);
    kept.push_back(std::move(t));
  }
  topics = std::move(kept);
  return out;
}

#define EPOCHGATE_INSTANTIATE(Req, Resp) \
  template codec::Req rewrite_request(const codec::Req&, int16_t, const RequestDecision&);
EPOCHGATE_FOR_EACH_DECIDED_API(EPOCHGATE_INSTANTIATE)
#undef EPOCHGATE_INSTANTIATE

}  // namespace epochgate::policy
