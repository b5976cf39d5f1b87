// policy/local_answer.cc: the response epochgate sends for the partitions it
// fences, written once over the generated partition shapes. Must never: hint
// a node without an epochgate NodeEndpoints entry, or answer a partition the
// decision forwards.
#include <utility>

#include "policy/hint_builder.h"
#include "policy/shape_support.h"

namespace epochgate::policy {

using detail::decision_at;

template <class Req>
ResponseOf<Req> build_local_response(const Req& req, int16_t version, const RequestDecision& d,
                                     const MetadataSnapshot& view,
                                     const EndpointResolver& endpoints, AnswerStats* st) {
  using Resp = ResponseOf<Req>;
  using Q = codec::PartitionShape<Req>;
  using R = codec::PartitionShape<Resp>;
  Resp r;
  const bool hints = R::carries_hints(version);
  [[maybe_unused]] auto hints_of = [&] {
    if constexpr (R::kHasHints)
      return HintBuilder<Resp>(view, endpoints);
    else
      return 0;
  }();
  const auto& topics = Q::topics(req);
  for (size_t ti = 0; ti < topics.size(); ++ti) {
    const auto& t = topics[ti];
    const auto& parts = Q::partitions(t);
    typename R::Topic* out = nullptr;
    for (size_t pi = 0; pi < parts.size(); ++pi) {
      const PartitionDecision* pd = decision_at(d, ti, pi);
      if (!pd || !pd->answered_locally()) continue;
      if (!out) {
        out = &R::topics(r).emplace_back();
        detail::copy_topic_identity<R, Q>(*out, t, version);
      }
      auto& p = R::partitions(*out).emplace_back();
      R::set_partition(p, pd->partition);
      R::set_error_code(p, pd->error_code);
      R::fill_error(p);
      if (R::kHasAcknowledgeError && Q::has_acknowledgements(parts[pi]))
        R::set_acknowledge_error(p, pd->error_code);
      if constexpr (R::kHasHints) {
        // Only a hint strictly newer than the epoch the client sent.
        if (hints && pd->has_hint() && pd->hint_epoch > pd->request_epoch) {
          const bool hinted = hints_of.hint(p, pd->hint_leader, pd->hint_epoch);
          if (st) ++(hinted ? st->hints : st->hints_dropped);
        }
      }
    }
  }
  if constexpr (R::kHasHints) {
    if (hints) hints_of.finish(r);
  }
  return r;
}

#define EPOCHGATE_INSTANTIATE(Req, Resp)                                                \
  template codec::Resp build_local_response(const codec::Req&, int16_t,                \
                                            const RequestDecision&, const MetadataSnapshot&, \
                                            const EndpointResolver&, AnswerStats*);
EPOCHGATE_FOR_EACH_DECIDED_API(EPOCHGATE_INSTANTIATE)
#undef EPOCHGATE_INSTANTIATE

}  // namespace epochgate::policy
