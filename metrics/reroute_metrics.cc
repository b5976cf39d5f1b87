// metrics/reroute_metrics.cc
#include "metrics/reroute_metrics.h"

#include "metrics/families.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace epochgate::metrics {

struct RerouteMetrics::Impl {
  explicit Impl(prometheus::Registry& r)
      : reroutes(register_family<FamilyId::reroutes_total>(r)),
        added_family(register_family<FamilyId::reroute_added_seconds>(r)),
        held_total(register_family<FamilyId::reroute_held_total>(r).Add({})),
        held_now(register_family<FamilyId::reroute_held>(r).Add({})),
        in_flight(register_family<FamilyId::reroute_in_flight>(r).Add({})),
        acks0_answers(register_family<FamilyId::reroute_acks0_answers_total>(r).Add({})),
        delivered(&reroutes.Add({{"api", "produce"}, {"result", "delivered"}, {"reason", ""}})),
        observed(&reroutes.Add({{"api", "produce"}, {"result", "observed"}, {"reason", ""}})),
        added(&added_family.Add({}, prometheus::Histogram::BucketBoundaries{
                                       0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                       0.5, 1, 5})) {
    auto& gaps = register_family<FamilyId::reroute_sequence_gaps_total>(r);
    for (size_t i = 0; i < kSequenceGapOutcomes.size(); ++i)
      sequence_gaps[i] = &gaps.Add({{"outcome", std::string(kSequenceGapOutcomes[i])}});
    for (size_t i = 1; i < kRerouteReasons.size(); ++i)
      fell_back[i] = &reroutes.Add({{"api", "produce"},
                                    {"result", "fell_back"},
                                    {"reason", std::string(kRerouteReasons[i])}});
  }
  prometheus::Family<prometheus::Counter>& reroutes;
  prometheus::Family<prometheus::Histogram>& added_family;
  prometheus::Counter& held_total;
  prometheus::Gauge& held_now;
  prometheus::Gauge& in_flight;
  prometheus::Counter& acks0_answers;
  prometheus::Counter* delivered;
  prometheus::Counter* observed;
  prometheus::Histogram* added;
  std::array<prometheus::Counter*, kRerouteReasons.size()> fell_back{};
  std::array<prometheus::Counter*, kSequenceGapOutcomes.size()> sequence_gaps{};
};

RerouteMetrics::RerouteMetrics(prometheus::Registry& registry)
    : impl_(std::make_unique<Impl>(registry)) {}
RerouteMetrics::~RerouteMetrics() = default;

void RerouteMetrics::delivered(size_t n) { impl_->delivered->Increment(static_cast<double>(n)); }

void RerouteMetrics::fell_back(std::string_view reason, size_t n) {
  size_t index = 10;  // upstream_failed
  for (size_t i = 1; i < kRerouteReasons.size(); ++i)
    if (kRerouteReasons[i] == reason) index = i;
  impl_->fell_back[index]->Increment(static_cast<double>(n));
}

void RerouteMetrics::sequence_gap(std::string_view outcome) {
  static_assert(kSequenceGapOutcomes[5] == "closed");
  size_t index = 5;  // an outcome this list does not name counts as closed
  for (size_t i = 0; i < kSequenceGapOutcomes.size(); ++i)
    if (kSequenceGapOutcomes[i] == outcome) index = i;
  impl_->sequence_gaps[index]->Increment();
}
void RerouteMetrics::observed(size_t n) { impl_->observed->Increment(static_cast<double>(n)); }
void RerouteMetrics::added(double seconds) { impl_->added->Observe(seconds); }
void RerouteMetrics::held(size_t n) { impl_->held_total.Increment(static_cast<double>(n)); }
void RerouteMetrics::set_held_now(double n) { impl_->held_now.Set(n); }
void RerouteMetrics::set_in_flight(double n) { impl_->in_flight.Set(n); }
void RerouteMetrics::acks0_answered() { impl_->acks0_answers.Increment(); }

}  // namespace epochgate::metrics
