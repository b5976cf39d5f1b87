// metrics/reroute_metrics.cc
#include "metrics/reroute_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace epochgate::metrics {

struct RerouteMetrics::Impl {
  explicit Impl(prometheus::Registry& r)
      : reroutes(prometheus::BuildCounter()
                     .Name("epochgate_reroutes_total")
                     .Help("Produce partitions sent to a broker that is no longer their leader: "
                           "delivered to the leader by epochgate, fell back to "
                           "NOT_LEADER_OR_FOLLOWER plus a hint (reason), or observed (observe "
                           "mode: would have been rerouted).")
                     .Register(r)),
        added_family(prometheus::BuildHistogram()
                         .Name("epochgate_reroute_added_seconds")
                         .Help("Time from epochgate's reroute decision to the new leader's answer.")
                         .Register(r)),
        held_total(prometheus::BuildCounter()
                       .Name("epochgate_reroute_held_total")
                       .Help("Produce writes held until earlier rerouted writes of the same "
                             "producer and partition were answered.")
                       .Register(r)
                       .Add({})),
        held_now(prometheus::BuildGauge()
                     .Name("epochgate_reroute_held")
                     .Help("Produce writes held for order now.")
                     .Register(r)
                     .Add({})),
        in_flight(prometheus::BuildGauge()
                      .Name("epochgate_reroute_in_flight")
                      .Help("Rerouted plus held Produce writes (bounded per worker by "
                            "reroute.max_in_flight).")
                      .Register(r)
                      .Add({})),
        acks0_answers(prometheus::BuildCounter()
                          .Name("epochgate_reroute_acks0_answers_total")
                          .Help("Answers a broker sent to acks=0 Produce requests epochgate "
                                "rerouted (dropped; a Kafka broker sends none).")
                          .Register(r)
                          .Add({})),
        delivered(&reroutes.Add({{"api", "produce"}, {"result", "delivered"}, {"reason", ""}})),
        observed(&reroutes.Add({{"api", "produce"}, {"result", "observed"}, {"reason", ""}})),
        added(&added_family.Add({}, prometheus::Histogram::BucketBoundaries{
                                       0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                       0.5, 1, 5})) {
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

void RerouteMetrics::observed(size_t n) { impl_->observed->Increment(static_cast<double>(n)); }
void RerouteMetrics::added(double seconds) { impl_->added->Observe(seconds); }
void RerouteMetrics::held(size_t n) { impl_->held_total.Increment(static_cast<double>(n)); }
void RerouteMetrics::set_held_now(double n) { impl_->held_now.Set(n); }
void RerouteMetrics::set_in_flight(double n) { impl_->in_flight.Set(n); }
void RerouteMetrics::acks0_answered() { impl_->acks0_answers.Increment(); }

}  // namespace epochgate::metrics
