// metrics/proxy_metrics_impl.h: the families behind ProxyMetrics and the
// cached children its methods touch (ProxyMetrics::Impl), with the slot and
// label helpers. Every child a hot-path method touches sits in a fixed array
// slot (by API key, node slot, direction...), created on first use and
// cached. Included only by metrics/proxy_metrics.cc; never registers a family
// outside metrics/families.def.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/api_labels.h"
#include "metrics/families.h"
#include "metrics/folded_histogram.h"
#include "metrics/label_interner.h"
#include "metrics/proxy_metrics.h"

namespace epochgate::metrics {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

constexpr std::size_t kApiSlots = kApiLabelCount + 1;  // 0..94 + "unknown"
constexpr std::size_t kNodeCap = 64;                   // distinct node ids with a label
constexpr std::size_t kNodeOther = kNodeCap;           // slot "other"
constexpr std::size_t kNodeBootstrap = kNodeCap + 1;   // node id -1: "bootstrap"
constexpr std::size_t kNodeSlots = kNodeCap + 2;
constexpr std::size_t kReasonCap = 32;  // frame errors, close reasons
constexpr std::size_t kFenceReasonCap = 16;
constexpr std::size_t kSmallCap = 8;  // hint sources, refresh triggers

// Buckets from 10 µs to 30 s: a forwarded frame costs tens of µs inside the
// proxy, while upstream Fetch long-polls and held requests reach seconds.
const Histogram::BucketBoundaries& latency_buckets() {
  static const Histogram::BucketBoundaries kBuckets = {
      0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
      0.025,   0.05,     0.1,     0.25,   0.5,     1.0,    2.5,   5.0,    10.0,  30.0};
  return kBuckets;
}

// APIs whose per-API series exist from the start: the ones epochgate decides
// on or learns from (Produce, Fetch, ListOffsets, Metadata, ApiVersions,
// OffsetForLeaderEpoch).
constexpr int16_t kCoreApis[] = {0, 1, 2, 3, 18, 23};
// APIs whose responses carry broker addresses epochgate rewrites (docs/architecture.md section 6):
// Produce, Fetch, Metadata, FindCoordinator, DescribeCluster, ShareFetch,
// ShareAcknowledge.
constexpr int16_t kRewritingApis[] = {0, 1, 3, 10, 60, 78, 79};

int side_index(Side s) {
  return s == Side::kClient ? 0 : 1;
}
int direction_index(Direction d) {
  return d == Direction::kClientToUpstream ? 0 : 1;
}
const char* direction_label(int i) {
  return metrics::direction_label(i == 0 ? Direction::kClientToUpstream : Direction::kUpstreamToClient);
}

std::size_t mode_slot(std::string_view mode) {
  if (mode == "enforce") return 0;
  if (mode == "observe") return 1;
  if (mode == "off") return 2;
  return 3;
}
const char* mode_label(std::size_t slot) {
  static const char* const kNames[] = {"enforce", "observe", "off", "other"};
  return kNames[slot];
}

// Returns the cached child in `cell`, creating it in `family` on first use.
// Family::Add returns the existing child for equal labels, so two threads
// racing here end up storing the same pointer.
template <typename T, typename MakeLabels>
T& child(std::atomic<T*>& cell, Family<T>& family, MakeLabels&& make_labels) {
  T* p = cell.load(std::memory_order_acquire);
  if (p == nullptr) {
    p = &family.Add(make_labels());
    cell.store(p, std::memory_order_release);
  }
  return *p;
}

}  // namespace

struct ProxyMetrics::Impl {
  explicit Impl(std::shared_ptr<prometheus::Registry> r)
      : registry(std::move(r)),
        requests(register_family<FamilyId::requests_total>(*registry)),
        responses(register_family<FamilyId::responses_total>(*registry)),
        bytes(register_family<FamilyId::bytes_total>(*registry)),
        connections_active(register_family<FamilyId::connections_active>(*registry)),
        connections_total(register_family<FamilyId::connections_total>(*registry)),
        connect_failures(register_family<FamilyId::upstream_connect_failures_total>(*registry)),
        unanswered(register_family<FamilyId::upstream_unanswered_total>(*registry)),
        warm(register_family<FamilyId::upstream_warm_total>(*registry)),
        overdue(register_family<FamilyId::upstream_overdue_requests_total>(*registry)),
        upstream_latency(register_family<FamilyId::upstream_latency_seconds>(*registry)),
        proxy_latency_family(register_family<FamilyId::proxy_latency_seconds>(*registry)),
        frame_errors(register_family<FamilyId::frame_errors_total>(*registry)),
        unexpected_responses_family(
            register_family<FamilyId::unexpected_responses_total>(*registry)),
        backpressure(register_family<FamilyId::backpressure_pauses_total>(*registry)),
        closed_reasons(register_family<FamilyId::connections_closed_total>(*registry)),
        api_versions_capped_family(register_family<FamilyId::api_versions_capped_total>(*registry)),
        addresses_rewritten_family(register_family<FamilyId::addresses_rewritten_total>(*registry)),
        config_reloads(register_family<FamilyId::config_reloads_total>(*registry)),
        config_last_reload_ok(
            register_family<FamilyId::config_last_reload_successful>(*registry).Add({})),
        config_last_reload_ts(
            register_family<FamilyId::config_last_reload_success_timestamp_seconds>(*registry)
                .Add({})),
        build_info(register_family<FamilyId::build_info>(*registry)),
        start_time(register_family<FamilyId::start_time_seconds>(*registry).Add({})),
        fenced(register_family<FamilyId::fenced_partitions_total>(*registry)),
        hints(register_family<FamilyId::hints_total>(*registry)),
        epochs_injected(register_family<FamilyId::epochs_injected_total>(*registry).Add({})),
        injected_epoch_answers(
            register_family<FamilyId::injected_epoch_answers_total>(*registry).Add({})),
        refreshes(register_family<FamilyId::metadata_refreshes_total>(*registry)),
        view_partitions(register_family<FamilyId::view_partitions>(*registry).Add({})),
        topics_forgotten(register_family<FamilyId::view_topics_forgotten_total>(*registry).Add({})),
        epoch_disputes(register_family<FamilyId::view_epoch_disputes_total>(*registry).Add({})),
        epoch_rollbacks(register_family<FamilyId::view_epoch_rollbacks_total>(*registry).Add({})),
        downgrades(register_family<FamilyId::version_downgrades_total>(*registry)),
        ready(register_family<FamilyId::ready>(*registry).Add({})),
        sasl_logins(register_family<FamilyId::sasl_authentications_total>(*registry)),
        sasl_reauthentications(
            register_family<FamilyId::sasl_reauthentications_total>(*registry).Add({})),
        sasl_session_expiry(
            register_family<FamilyId::sasl_session_expiry_seconds>(*registry).Add({})),
        refresh_errors(register_family<FamilyId::metadata_refresh_errors_total>(*registry)),
        last_refresh(
            register_family<FamilyId::metadata_last_success_timestamp_seconds>(*registry).Add({})),
        view_age(register_family<FamilyId::metadata_view_age_seconds>(*registry).Add({})) {
    proxy_latency = make_folded(proxy_latency_family.Add({}, latency_buckets()));
    unexpected_responses = &unexpected_responses_family.Add({});
    api_versions_capped = &api_versions_capped_family.Add({});
    for (int d = 0; d < 2; ++d) {
      bytes_children[d] = &bytes.Add({{"direction", direction_label(d)}});
      backpressure_children[d] = &backpressure.Add({{"direction", direction_label(d)}});
    }
    warm_hit = &warm.Add({{"outcome", "hit"}});
    warm_miss = &warm.Add({{"outcome", "miss"}});
    reload_success = &config_reloads.Add({{"result", "success"}});
    reload_failure = &config_reloads.Add({{"result", "failure"}});
    config_last_reload_ok.Set(1);
    // prometheus-cpp leaves a family without children out of the exposition.
    // Children every deployment has are created up front, so dashboards and
    // alerts see zeros instead of missing series; the rest appear on first use.
    for (Side s : {Side::kClient, Side::kUpstream}) {
      node_children(s, kNodeBootstrap);
    }
    child(connect_failure_children[kNodeBootstrap], connect_failures, [] {
      return prometheus::Labels{{"node", "bootstrap"}};
    });
    child(unanswered_children[kNodeBootstrap], unanswered, [] {
      return prometheus::Labels{{"node", "bootstrap"}};
    });
    for (int16_t api : kCoreApis) {
      const int slot = api_slot(api);
      const prometheus::Labels labels{{"api", api_label(api)}};
      child(request_children[slot], requests, [&] { return labels; });
      child(response_children[slot], responses, [&] { return labels; });
      latency_child(slot, [&] { return labels; });
    }
    for (int16_t api : kRewritingApis) {
      child(rewritten_children[api_slot(api)], addresses_rewritten_family, [&] {
        return prometheus::Labels{{"api", api_label(api)}};
      });
    }
    for (int16_t api : {int16_t{0}, int16_t{1}}) {
      child(downgrade_children[api_slot(api)], downgrades, [&] {
        return prometheus::Labels{{"api", api_label(api)}};
      });
    }
    for (const char* source : {"synthesized", "backfilled", "rewritten"}) {
      hint_children[hint_sources.slot(std::string_view(source))].store(
          &hints.Add({{"source", source}}));
    }
    for (const char* trigger : {"periodic", "urgent", "no_epoch", "no_topic_id", "startup"}) {
      refresh_children[refresh_triggers.slot(std::string_view(trigger))].store(
          &refreshes.Add({{"trigger", trigger}}));
    }
  }

  // The upstream latency histogram of an API slot, made on first use. Labels
  // are made on first use only: this runs for every response, and building
  // a Labels map (a tree node and two strings) each time cost more than the
  // observation itself.
  template <typename MakeLabels>
  FoldedHistogram& latency_child(std::size_t slot, MakeLabels&& make_labels) {
    FoldedHistogram* p = latency_children[slot].load(std::memory_order_acquire);
    if (p != nullptr) return *p;
    std::lock_guard<std::mutex> lock(folded_mutex);
    p = latency_children[slot].load(std::memory_order_relaxed);
    if (p == nullptr) {
      p = make_folded_locked(upstream_latency.Add(make_labels(), latency_buckets()));
      latency_children[slot].store(p, std::memory_order_release);
    }
    return *p;
  }

  FoldedHistogram* make_folded(Histogram& exposed) {
    std::lock_guard<std::mutex> lock(folded_mutex);
    return make_folded_locked(exposed);
  }
  FoldedHistogram* make_folded_locked(Histogram& exposed) {
    folded.push_back(std::make_unique<FoldedHistogram>(exposed, latency_buckets()));
    return folded.back().get();
  }

  void fold() {
    std::lock_guard<std::mutex> lock(folded_mutex);
    for (auto& h : folded) h->fold();
  }

  std::string node_label(std::size_t slot) const {
    if (slot == kNodeBootstrap) return "bootstrap";
    if (slot == kNodeOther) return "other";
    return std::to_string(nodes.key(slot));
  }

  std::size_t node_slot(int32_t node_id) {
    if (node_id == -1) return kNodeBootstrap;
    return nodes.slot(node_id);
  }

  struct NodePair {
    Gauge* active;
    Counter* total;
  };

  NodePair node_children(Side s, std::size_t slot) {
    const int si = side_index(s);
    auto labels = [&] {
      return prometheus::Labels{{"side", side_label(s)}, {"node", node_label(slot)}};
    };
    Gauge& g = child(active_children[si][slot], connections_active, labels);
    Counter& c = child(total_children[si][slot], connections_total, labels);
    return {&g, &c};
  }

  std::shared_ptr<prometheus::Registry> registry;

  Family<Counter>& requests;
  Family<Counter>& responses;
  Family<Counter>& bytes;
  Family<Gauge>& connections_active;
  Family<Counter>& connections_total;
  Family<Counter>& connect_failures;
  Family<Counter>& unanswered;
  Family<Counter>& warm;
  Family<Counter>& overdue;
  Family<Histogram>& upstream_latency;
  Family<Histogram>& proxy_latency_family;
  Family<Counter>& frame_errors;
  Family<Counter>& unexpected_responses_family;
  Family<Counter>& backpressure;
  Family<Counter>& closed_reasons;
  Family<Counter>& api_versions_capped_family;
  Family<Counter>& addresses_rewritten_family;
  Family<Counter>& config_reloads;
  Gauge& config_last_reload_ok;
  Gauge& config_last_reload_ts;
  Family<Gauge>& build_info;
  Gauge& start_time;
  Family<Counter>& fenced;
  Family<Counter>& hints;
  Counter& epochs_injected;
  Counter& injected_epoch_answers;
  Family<Counter>& refreshes;
  Gauge& view_partitions;
  Counter& topics_forgotten;
  Counter& epoch_disputes;
  Counter& epoch_rollbacks;
  Family<Counter>& downgrades;
  Gauge& ready;
  Family<Counter>& sasl_logins;
  Counter& sasl_reauthentications;
  Gauge& sasl_session_expiry;
  Family<Counter>& refresh_errors;
  Gauge& last_refresh;
  Gauge& view_age;

  // Every latency histogram, folded into its exposed child by fold().
  std::mutex folded_mutex;
  std::vector<std::unique_ptr<FoldedHistogram>> folded;
  FoldedHistogram* proxy_latency = nullptr;
  Counter* unexpected_responses = nullptr;
  Counter* api_versions_capped = nullptr;
  Counter* warm_hit = nullptr;
  Counter* warm_miss = nullptr;
  Counter* reload_success = nullptr;
  Counter* reload_failure = nullptr;
  std::array<Counter*, 2> bytes_children{};
  std::array<Counter*, 2> backpressure_children{};

  std::array<std::atomic<Counter*>, kApiSlots> request_children{};
  std::array<std::atomic<Counter*>, kApiSlots> response_children{};
  std::array<std::atomic<FoldedHistogram*>, kApiSlots> latency_children{};
  std::array<std::atomic<Counter*>, kApiSlots> rewritten_children{};
  std::array<std::atomic<Counter*>, kApiSlots> downgrade_children{};

  LabelInterner<int32_t, kNodeCap> nodes;
  std::array<std::array<std::atomic<Gauge*>, kNodeSlots>, 2> active_children{};
  std::array<std::array<std::atomic<Counter*>, kNodeSlots>, 2> total_children{};
  std::array<std::atomic<Counter*>, kNodeSlots> connect_failure_children{};
  std::array<std::atomic<Counter*>, kNodeSlots> unanswered_children{};
  std::array<std::atomic<Counter*>, kApiSlots> overdue_children{};

  LabelInterner<std::string, kReasonCap> frame_error_reasons;
  std::array<std::atomic<Counter*>, kReasonCap + 1> frame_error_children{};
  LabelInterner<std::string, kReasonCap> close_reasons;
  std::array<std::atomic<Counter*>, kReasonCap + 1> close_reason_children{};

  LabelInterner<std::string, kFenceReasonCap> fence_reasons;
  // [api slot][reason slot][mode slot]
  std::array<std::array<std::array<std::atomic<Counter*>, 4>, kFenceReasonCap + 1>, kApiSlots>
      fenced_children{};

  LabelInterner<std::string, kSmallCap> hint_sources;
  std::array<std::atomic<Counter*>, kSmallCap + 1> hint_children{};
  LabelInterner<std::string, kSmallCap> refresh_triggers;
  std::array<std::atomic<Counter*>, kSmallCap + 1> refresh_children{};

  std::mutex build_info_mutex;
  Gauge* build_info_child = nullptr;

  // Buffer memory budget (limits.buffer_budget_bytes), registered on first use.
  Counter* budget_pauses =
      &register_family<FamilyId::buffer_budget_pauses_total>(*registry).Add({});
  Gauge* buffered_bytes = &register_family<FamilyId::buffered_bytes>(*registry).Add({});

  // What client connections leave held; all return to 0 (the pools to what
  // a steady load uses) once the clients have gone, whatever was in flight.
  Gauge* sessions_live = &register_family<FamilyId::sessions_live>(*registry).Add({});
  Gauge* in_flight = &register_family<FamilyId::in_flight_requests>(*registry).Add({});
  Gauge* upstreams_live = &register_family<FamilyId::upstream_connections_live>(*registry).Add({});
  Gauge* pool_buffers = &register_family<FamilyId::buffer_pool_buffers>(*registry).Add({});
  Gauge* pool_bytes = &register_family<FamilyId::buffer_pool_bytes>(*registry).Add({});
};

namespace {

template <std::size_t N, std::size_t Cap>
Counter& interned_counter(LabelInterner<std::string, Cap>& interner,
                          std::array<std::atomic<Counter*>, N>& cells, Family<Counter>& family,
                          const char* label, std::string_view value) {
  const std::size_t slot = interner.slot(value);
  return child(cells[slot], family, [&] {
    return prometheus::Labels{
        {label, slot == interner.kOverflow ? std::string("other") : interner.key(slot)}};
  });
}

}  // namespace

}  // namespace epochgate::metrics
