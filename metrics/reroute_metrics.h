// metrics/reroute_metrics.h: the `epochgate_reroute*` families: Produce
// partitions epochgate delivered to their leader itself, or fell back on
// (with the reason), the time a reroute added, and writes held so that one
// producer's writes to one partition stay in order. Labels are bounded:
// api is "produce", result "delivered"/"fell_back"/"observed", reason one
// of kRerouteReasons. Thread-safe (prometheus-cpp atomics), no label maps
// built on the data path.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string_view>

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
}  // namespace prometheus

namespace epochgate::metrics {

/// Every `reason` label value of epochgate_reroutes_total{result="fell_back"}
/// (docs/rerouting.md, "Fallback reasons"). The order guard's refusals come
/// first, in policy::RerouteRefusal order (index = enum value).
inline constexpr std::array<std::string_view, 18> kRerouteReasons = {
    "",                 // delivered / observed
    "earlier_in_flight", "later_in_flight", "earlier_held", "stream_fell_back", "max_in_flight",
    "off",          "no_leader",       "identity", "second_hop", "upstream_failed",
    "unsupported_version", "batch_unreadable", "hold_full", "duplicate_partition",
    "buffer_budget", "hold_timeout", "maybe_stored"};

/// Every `outcome` label value of epochgate_reroute_sequence_gaps_total.
inline constexpr std::array<std::string_view, 7> kSequenceGapOutcomes = {
    "resent", "one_more_hop", "stored", "unproven", "hold_timeout", "closed", "no_room"};

class RerouteMetrics {
 public:
  explicit RerouteMetrics(prometheus::Registry& registry);
  ~RerouteMetrics();

  /// epochgate_reroutes_total{api="produce",result="delivered",reason=""}
  void delivered(size_t n = 1);
  /// epochgate_reroutes_total{api="produce",result="fell_back",reason}; an
  /// unknown reason counts as "upstream_failed".
  void fell_back(std::string_view reason, size_t n = 1);
  /// epochgate_reroutes_total{api="produce",result="observed",reason=""}:
  /// what observe mode would have rerouted.
  void observed(size_t n);
  /// epochgate_reroute_sequence_gaps_total{outcome}: a held run of refused
  /// writes settled; an unknown outcome counts as "closed".
  void sequence_gap(std::string_view outcome);
  /// epochgate_reroute_added_seconds: from the decision to the new leader's answer.
  void added(double seconds);
  /// epochgate_reroute_held_total, and the epochgate_reroute_held gauge.
  void held(size_t n);
  void set_held_now(double n);
  /// epochgate_reroute_in_flight (rerouted plus held writes, this worker's last report).
  void set_in_flight(double n);
  /// epochgate_reroute_acks0_answers_total: answers a broker sent to
  /// rerouted acks=0 Produce requests (dropped; brokers send none).
  void acks0_answered();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace epochgate::metrics
