// metrics/proxy_metrics.cc: the `epochgate_*` families behind ProxyMetrics.
// Every child a hot-path method touches sits in a fixed array slot (by API key,
// node slot, direction...), created on first use and cached, so a call costs an
// array index plus an atomic add. Label sets are bounded by construction: API
// keys outside 0-94 are "unknown", node ids past the cap are "other", and
// string labels (reason, source, trigger) are interned up to a small cap.
// Never put client-chosen strings (topics, client ids) in a label here.
#include "metrics/proxy_metrics.h"

#include "metrics/reroute_metrics.h"
#include "metrics/stream_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <string>

#include "metrics/api_labels.h"
#include "metrics/label_interner.h"

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
const char* side_label(Side s) {
  return s == Side::kClient ? "client" : "upstream";
}
int direction_index(Direction d) {
  return d == Direction::kClientToUpstream ? 0 : 1;
}
const char* direction_label(int i) {
  return i == 0 ? "client_to_upstream" : "upstream_to_client";
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

// The same for a latency histogram. The labels are made only on first use:
// this runs for every response, and building a Labels map (a node, two
// strings) each time cost more than the observation itself.
template <typename MakeLabels>
Histogram& histogram_child(std::atomic<Histogram*>& cell, Family<Histogram>& family,
                           MakeLabels&& make_labels) {
  Histogram* p = cell.load(std::memory_order_acquire);
  if (p == nullptr) {
    p = &family.Add(make_labels(), latency_buckets());
    cell.store(p, std::memory_order_release);
  }
  return *p;
}

}  // namespace

struct ProxyMetrics::Impl {
  explicit Impl(std::shared_ptr<prometheus::Registry> r)
      : registry(std::move(r)),
        requests(prometheus::BuildCounter()
                     .Name("epochgate_requests_total")
                     .Help("Kafka requests read from clients, by API.")
                     .Register(*registry)),
        responses(prometheus::BuildCounter()
                      .Name("epochgate_responses_total")
                      .Help("Kafka responses written to clients (forwarded or answered by "
                            "epochgate), by API.")
                      .Register(*registry)),
        bytes(prometheus::BuildCounter()
                  .Name("epochgate_bytes_total")
                  .Help("Bytes proxied, by direction.")
                  .Register(*registry)),
        connections_active(prometheus::BuildGauge()
                               .Name("epochgate_connections_active")
                               .Help("Open connections, by side (client, upstream) and node "
                                     "(broker node id, \"bootstrap\", or \"other\" past the cap).")
                               .Register(*registry)),
        connections_total(prometheus::BuildCounter()
                              .Name("epochgate_connections_total")
                              .Help("Connections opened, by side and node.")
                              .Register(*registry)),
        connect_failures(prometheus::BuildCounter()
                             .Name("epochgate_upstream_connect_failures_total")
                             .Help("Failed connection attempts to brokers, by node.")
                             .Register(*registry)),
        unanswered(prometheus::BuildCounter()
                       .Name("epochgate_upstream_unanswered_total")
                       .Help("Upstream connections that connected but did not answer "
                             "epochgate's ApiVersions within limits.upstream_connect_timeout_ms "
                             "(also counted as connect failures), by node.")
                       .Register(*registry)),
        overdue(prometheus::BuildCounter()
                    .Name("epochgate_upstream_overdue_requests_total")
                    .Help("Forwarded requests still unanswered by their broker "
                          "limits.upstream_overdue_ms past the deadline the request carries, "
                          "by API.")
                    .Register(*registry)),
        upstream_latency(prometheus::BuildHistogram()
                             .Name("epochgate_upstream_latency_seconds")
                             .Help("Time from writing a request to a broker to reading its "
                                   "response, by API.")
                             .Register(*registry)),
        proxy_latency_family(prometheus::BuildHistogram()
                                 .Name("epochgate_proxy_latency_seconds")
                                 .Help("Time epochgate itself held a request and its response "
                                       "(excludes the broker's time).")
                                 .Register(*registry)),
        frame_errors(prometheus::BuildCounter()
                         .Name("epochgate_frame_errors_total")
                         .Help("Malformed or rejected frames, by reason.")
                         .Register(*registry)),
        unexpected_responses_family(prometheus::BuildCounter()
                                        .Name("epochgate_unexpected_responses_total")
                                        .Help("Responses from brokers to requests that expect "
                                              "none (acks=0 Produce); dropped.")
                                        .Register(*registry)),
        backpressure(prometheus::BuildCounter()
                         .Name("epochgate_backpressure_pauses_total")
                         .Help("Times reading was paused because the other side's write queue "
                               "passed the high watermark, by direction of the paused flow.")
                         .Register(*registry)),
        closed_reasons(
            prometheus::BuildCounter()
                .Name("epochgate_connections_closed_total")
                .Help("Proxied connections closed, by reason (client_closed, upstream_error, "
                      "idle_timeout, fenced_acks0, ...).")
                .Register(*registry)),
        api_versions_capped_family(prometheus::BuildCounter()
                                       .Name("epochgate_api_versions_capped_total")
                                       .Help("ApiVersions responses whose version ranges were "
                                             "capped to what the codec knows.")
                                       .Register(*registry)),
        addresses_rewritten_family(prometheus::BuildCounter()
                                       .Name("epochgate_addresses_rewritten_total")
                                       .Help("Broker endpoints rewritten to epochgate listeners "
                                             "in responses, by API.")
                                       .Register(*registry)),
        config_reloads(prometheus::BuildCounter()
                           .Name("epochgate_config_reloads_total")
                           .Help("Configuration reload attempts, by result (success, failure).")
                           .Register(*registry)),
        config_last_reload_ok(prometheus::BuildGauge()
                                  .Name("epochgate_config_last_reload_successful")
                                  .Help("1 if the last configuration reload succeeded (or none "
                                        "happened yet), 0 if it was refused.")
                                  .Register(*registry)
                                  .Add({})),
        config_last_reload_ts(prometheus::BuildGauge()
                                  .Name("epochgate_config_last_reload_success_timestamp_seconds")
                                  .Help("Unix time of the last successful configuration reload "
                                        "(0 until one happens).")
                                  .Register(*registry)
                                  .Add({})),
        build_info(prometheus::BuildGauge()
                       .Name("epochgate_build_info")
                       .Help("Always 1; the version label says which epochgate runs.")
                       .Register(*registry)),
        start_time(prometheus::BuildGauge()
                       .Name("epochgate_start_time_seconds")
                       .Help("Unix time the process started.")
                       .Register(*registry)
                       .Add({})),
        fenced(prometheus::BuildCounter()
                   .Name("epochgate_fenced_partitions_total")
                   .Help("Partitions of requests found stale, by API, reason and mode (enforce: "
                         "answered by epochgate; observe: only counted).")
                   .Register(*registry)),
        hints(prometheus::BuildCounter()
                  .Name("epochgate_hints_total")
                  .Help("KIP-951 leader hints sent to clients, by source (synthesized, "
                        "backfilled, rewritten).")
                  .Register(*registry)),
        epochs_injected(prometheus::BuildCounter()
                            .Name("epochgate_epochs_injected_total")
                            .Help("Partitions whose CurrentLeaderEpoch -1 was replaced by the "
                                  "view's epoch.")
                            .Register(*registry)
                            .Add({})),
        refreshes(prometheus::BuildCounter()
                      .Name("epochgate_metadata_refreshes_total")
                      .Help("Metadata refreshes epochgate issued itself, by trigger: startup, "
                            "periodic, urgent (a mismatch), no_epoch and no_topic_id (a "
                            "client's old Metadata version named a topic or a leader move).")
                      .Register(*registry)),
        view_partitions(prometheus::BuildGauge()
                            .Name("epochgate_view_partitions")
                            .Help("Partitions in the current metadata view.")
                            .Register(*registry)
                            .Add({})),
        topics_forgotten(prometheus::BuildCounter()
                             .Name("epochgate_view_topics_forgotten_total")
                             .Help("Topics dropped from the metadata view (and from the "
                                   "periodic refresh) after refresher.topic_idle_ms with no "
                                   "client request naming them.")
                             .Register(*registry)
                             .Add({})),
        epoch_disputes(prometheus::BuildCounter()
                           .Name("epochgate_view_epoch_disputes_total")
                           .Help("View entries that stopped fencing because the cluster "
                                 "repeatedly reported a lower leader epoch for the same topic id.")
                           .Register(*registry)
                           .Add({})),
        epoch_rollbacks(prometheus::BuildCounter()
                            .Name("epochgate_view_epoch_rollbacks_total")
                            .Help("View entries moved back to a lower leader epoch that the "
                                  "cluster confirmed policy.epoch_rollback_confirmations times.")
                            .Register(*registry)
                            .Add({})),
        downgrades(prometheus::BuildCounter()
                       .Name("epochgate_version_downgrades_total")
                       .Help("Requests sent upstream at an older version than the client used "
                             "(KIP-951 bridge: Produce v10->v9, Fetch v16->v15), by API.")
                       .Register(*registry)),
        ready(prometheus::BuildGauge()
                  .Name("epochgate_ready")
                  .Help("1 while /readyz answers 200 (listeners bound, view loaded, not "
                        "draining), else 0.")
                  .Register(*registry)
                  .Add({})),
        sasl_logins(prometheus::BuildCounter()
                        .Name("epochgate_sasl_authentications_total")
                        .Help("SASL logins epochgate made on its own connections (side=\"own\"), "
                              "by mechanism and result (ok, failed); re-authentications "
                              "included.")
                        .Register(*registry)),
        sasl_reauthentications(prometheus::BuildCounter()
                                   .Name("epochgate_sasl_reauthentications_total")
                                   .Help("Logins repeated on a live own connection before the "
                                         "broker's session lifetime ran out (KIP-368).")
                                   .Register(*registry)
                                   .Add({})),
        sasl_session_expiry(prometheus::BuildGauge()
                                .Name("epochgate_sasl_session_expiry_seconds")
                                .Help("Seconds until the broker ends epochgate's own SASL "
                                      "session (KIP-368 session lifetime); 0: no lifetime or "
                                      "no session.")
                                .Register(*registry)
                                .Add({})),
        refresh_errors(prometheus::BuildCounter()
                           .Name("epochgate_metadata_refresh_errors_total")
                           .Help("Refresh rounds in which no broker answered epochgate's own "
                                 "Metadata request, by reason: unreachable (no broker "
                                 "connected), closed_at_metadata (brokers closed the "
                                 "connection at the request, as SASL listeners may), "
                                 "sasl_login (the login was refused or impossible), request "
                                 "(timeouts, bad answers).")
                           .Register(*registry)),
        last_refresh(prometheus::BuildGauge()
                         .Name("epochgate_metadata_last_success_timestamp_seconds")
                         .Help("Unix time of the last Metadata answer the refresher learned "
                               "from; 0 before the first.")
                         .Register(*registry)
                         .Add({})),
        view_age(prometheus::BuildGauge()
                     .Name("epochgate_metadata_view_age_seconds")
                     .Help("Seconds since the refresher last learned a Metadata answer (since "
                           "start before the first); grows while refreshes fail.")
                     .Register(*registry)
                     .Add({})) {
    proxy_latency = &proxy_latency_family.Add({}, latency_buckets());
    unexpected_responses = &unexpected_responses_family.Add({});
    api_versions_capped = &api_versions_capped_family.Add({});
    for (int d = 0; d < 2; ++d) {
      bytes_children[d] = &bytes.Add({{"direction", direction_label(d)}});
      backpressure_children[d] = &backpressure.Add({{"direction", direction_label(d)}});
    }
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
      histogram_child(latency_children[slot], upstream_latency, [&] { return labels; });
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

  Histogram* proxy_latency = nullptr;
  Counter* unexpected_responses = nullptr;
  Counter* api_versions_capped = nullptr;
  Counter* reload_success = nullptr;
  Counter* reload_failure = nullptr;
  std::array<Counter*, 2> bytes_children{};
  std::array<Counter*, 2> backpressure_children{};

  std::array<std::atomic<Counter*>, kApiSlots> request_children{};
  std::array<std::atomic<Counter*>, kApiSlots> response_children{};
  std::array<std::atomic<Histogram*>, kApiSlots> latency_children{};
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
  Counter* budget_pauses = &prometheus::BuildCounter()
                                .Name("epochgate_buffer_budget_pauses_total")
                                .Help(
                                    "Times a client connection stopped being read because all "
                                    "connections' buffers together passed "
                                    "limits.buffer_budget_bytes.")
                                .Register(*registry)
                                .Add({});
  Gauge* buffered_bytes = &prometheus::BuildGauge()
                               .Name("epochgate_buffered_bytes")
                               .Help("Bytes of connection buffers held, all connections.")
                               .Register(*registry)
                               .Add({});

  // What client connections leave held; all return to 0 (the pools to what
  // a steady load uses) once the clients have gone, whatever was in flight.
  Gauge* sessions_live = &prometheus::BuildGauge()
                              .Name("epochgate_sessions_live")
                              .Help("Client sessions in memory (open, or closing and not yet "
                                    "freed), all workers.")
                              .Register(*registry)
                              .Add({});
  Gauge* in_flight = &prometheus::BuildGauge()
                          .Name("epochgate_in_flight_requests")
                          .Help("Requests read from clients and not yet answered to them, "
                                "held by the sessions in memory.")
                          .Register(*registry)
                          .Add({});
  Gauge* upstreams_live = &prometheus::BuildGauge()
                               .Name("epochgate_upstream_connections_live")
                               .Help("Upstream connections of the sessions in memory (dialing, "
                                     "open or closing).")
                               .Register(*registry)
                               .Add({});
  Gauge* pool_buffers = &prometheus::BuildGauge()
                             .Name("epochgate_buffer_pool_buffers")
                             .Help("Buffers the workers' pools keep for reuse.")
                             .Register(*registry)
                             .Add({});
  Gauge* pool_bytes = &prometheus::BuildGauge()
                           .Name("epochgate_buffer_pool_bytes")
                           .Help("Bytes of the buffers the workers' pools keep for reuse.")
                           .Register(*registry)
                           .Add({});
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

ProxyMetrics::ProxyMetrics(std::shared_ptr<prometheus::Registry> registry)
    : impl_(std::make_unique<Impl>(std::move(registry))),
      reroute_(std::make_unique<RerouteMetrics>(*impl_->registry)),
      stream_(std::make_unique<StreamMetrics>(*impl_->registry)) {
  // Series an operator alerts on exist at 0 from the start, so rate() and
  // increase() see the first event instead of a series appearing from nowhere.
  for (const char* reason :
       {"frame_too_large", "negative_frame_size", "truncated", "malformed_request",
        "malformed_response", "unexpected_correlation_id", "endpoint_unmapped",
        "unsupported_version", "max_connections", "partial_frame_timeout"})
    interned_counter(impl_->frame_error_reasons, impl_->frame_error_children, impl_->frame_errors,
                     "reason", reason);
  constexpr int16_t kProduce = 0, kFetch = 1, kListOffsets = 2, kOffsetForLeaderEpoch = 23,
                    kShareFetch = 78, kShareAcknowledge = 79;
  for (int16_t api : {kFetch, kListOffsets, kOffsetForLeaderEpoch})
    fenced_counter(api, "stale_epoch", "enforce");
  for (int16_t api : {kProduce, kShareFetch, kShareAcknowledge})
    fenced_counter(api, "not_leader", "enforce");
}

ProxyMetrics::~ProxyMetrics() = default;

std::shared_ptr<prometheus::Registry> ProxyMetrics::registry() const {
  return impl_->registry;
}

void ProxyMetrics::request(int16_t api_key) {
  const int slot = api_slot(api_key);
  child(impl_->request_children[slot], impl_->requests, [&] {
    return prometheus::Labels{{"api", api_label(api_key)}};
  }).Increment();
}

void ProxyMetrics::response(int16_t api_key) {
  const int slot = api_slot(api_key);
  child(impl_->response_children[slot], impl_->responses, [&] {
    return prometheus::Labels{{"api", api_label(api_key)}};
  }).Increment();
}

void ProxyMetrics::bytes(Direction d, uint64_t n) {
  impl_->bytes_children[direction_index(d)]->Increment(static_cast<double>(n));
}

void ProxyMetrics::connection_opened(Side s, int32_t node_id) {
  auto pair = impl_->node_children(s, impl_->node_slot(node_id));
  pair.active->Increment();
  pair.total->Increment();
}

void ProxyMetrics::connection_closed(Side s, int32_t node_id) {
  impl_->node_children(s, impl_->node_slot(node_id)).active->Decrement();
}

void ProxyMetrics::upstream_connect_failure(int32_t node_id) {
  const std::size_t slot = impl_->node_slot(node_id);
  child(impl_->connect_failure_children[slot], impl_->connect_failures, [&] {
    return prometheus::Labels{{"node", impl_->node_label(slot)}};
  }).Increment();
}

void ProxyMetrics::upstream_unanswered(int32_t node_id) {
  const std::size_t slot = impl_->node_slot(node_id);
  child(impl_->unanswered_children[slot], impl_->unanswered, [&] {
    return prometheus::Labels{{"node", impl_->node_label(slot)}};
  }).Increment();
}

void ProxyMetrics::upstream_overdue(int16_t api_key) {
  const int slot = api_slot(api_key);
  child(impl_->overdue_children[slot], impl_->overdue, [&] {
    return prometheus::Labels{{"api", api_label(api_key)}};
  }).Increment();
}

void ProxyMetrics::upstream_latency(int16_t api_key, double seconds) {
  const int slot = api_slot(api_key);
  histogram_child(impl_->latency_children[slot], impl_->upstream_latency, [&] {
    return prometheus::Labels{{"api", api_label(api_key)}};
  }).Observe(seconds);
}

void ProxyMetrics::proxy_latency(double seconds) {
  impl_->proxy_latency->Observe(seconds);
}

void ProxyMetrics::frame_error(std::string_view reason) {
  interned_counter(impl_->frame_error_reasons, impl_->frame_error_children, impl_->frame_errors,
                   "reason", reason)
      .Increment();
}

void ProxyMetrics::unexpected_response() {
  impl_->unexpected_responses->Increment();
}

void ProxyMetrics::backpressure_pause(Direction d) {
  impl_->backpressure_children[direction_index(d)]->Increment();
}

void ProxyMetrics::connection_closed_reason(std::string_view reason) {
  interned_counter(impl_->close_reasons, impl_->close_reason_children, impl_->closed_reasons,
                   "reason", reason)
      .Increment();
}

void ProxyMetrics::api_versions_capped() {
  impl_->api_versions_capped->Increment();
}

void ProxyMetrics::addresses_rewritten(int16_t api_key, uint64_t n) {
  const int slot = api_slot(api_key);
  child(impl_->rewritten_children[slot], impl_->addresses_rewritten_family, [&] {
    return prometheus::Labels{{"api", api_label(api_key)}};
  }).Increment(static_cast<double>(n));
}

void ProxyMetrics::config_reload(bool success) {
  if (success) {
    impl_->reload_success->Increment();
    impl_->config_last_reload_ok.Set(1);
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    impl_->config_last_reload_ts.Set(std::chrono::duration<double>(now).count());
  } else {
    impl_->reload_failure->Increment();
    impl_->config_last_reload_ok.Set(0);
  }
}

void ProxyMetrics::set_build_info(std::string_view version, double start_time_seconds) {
  std::lock_guard<std::mutex> lock(impl_->build_info_mutex);
  if (impl_->build_info_child != nullptr) impl_->build_info.Remove(impl_->build_info_child);
  impl_->build_info_child = &impl_->build_info.Add({{"version", std::string(version)}});
  impl_->build_info_child->Set(1);
  impl_->start_time.Set(start_time_seconds);
}

void ProxyMetrics::fenced_partition(int16_t api_key, std::string_view reason,
                                    std::string_view mode) {
  fenced_counter(api_key, reason, mode).Increment();
}

Counter& ProxyMetrics::fenced_counter(int16_t api_key, std::string_view reason,
                                      std::string_view mode) {
  const int api = api_slot(api_key);
  const std::size_t r = impl_->fence_reasons.slot(reason);
  const std::size_t m = mode_slot(mode);
  return child(impl_->fenced_children[api][r][m], impl_->fenced, [&] {
    return prometheus::Labels{
        {"api", api_label(api_key)},
        {"reason",
         r == impl_->fence_reasons.kOverflow ? std::string("other") : impl_->fence_reasons.key(r)},
        {"mode", mode_label(m)}};
  });
}

void ProxyMetrics::hint(std::string_view source) {
  interned_counter(impl_->hint_sources, impl_->hint_children, impl_->hints, "source", source)
      .Increment();
}

void ProxyMetrics::epoch_injected(uint64_t n) {
  impl_->epochs_injected.Increment(static_cast<double>(n));
}

void ProxyMetrics::metadata_refresh(std::string_view trigger) {
  interned_counter(impl_->refresh_triggers, impl_->refresh_children, impl_->refreshes, "trigger",
                   trigger)
      .Increment();
}

void ProxyMetrics::sasl_authentication(std::string_view side, std::string_view mechanism,
                                       bool ok, bool reauthentication) {
  impl_->sasl_logins
      .Add({{"side", std::string(side)},
            {"mechanism", std::string(mechanism)},
            {"result", ok ? "ok" : "failed"}})
      .Increment();
  if (ok && reauthentication) impl_->sasl_reauthentications.Increment();
}

void ProxyMetrics::set_sasl_session_expiry(double seconds) {
  impl_->sasl_session_expiry.Set(seconds);
}

void ProxyMetrics::set_view_partitions(int64_t n) {
  impl_->view_partitions.Set(static_cast<double>(n));
}

void ProxyMetrics::view_topics_forgotten(uint64_t n) {
  if (n > 0) impl_->topics_forgotten.Increment(static_cast<double>(n));
}

void ProxyMetrics::view_epochs_disputed(uint64_t n) {
  if (n > 0) impl_->epoch_disputes.Increment(static_cast<double>(n));
}

void ProxyMetrics::view_epochs_rolled_back(uint64_t n) {
  if (n > 0) impl_->epoch_rollbacks.Increment(static_cast<double>(n));
}

void ProxyMetrics::version_downgrade(int16_t api_key) {
  const int slot = api_slot(api_key);
  child(impl_->downgrade_children[slot], impl_->downgrades, [&] {
    return prometheus::Labels{{"api", api_label(api_key)}};
  }).Increment();
}

void ProxyMetrics::metadata_refresh_failed(std::string_view reason) {
  impl_->refresh_errors.Add({{"reason", std::string(reason)}}).Increment();
}

void ProxyMetrics::metadata_refreshed(double unix_seconds) {
  impl_->last_refresh.Set(unix_seconds);
}

void ProxyMetrics::set_view_age(double seconds) {
  impl_->view_age.Set(seconds);
}

void ProxyMetrics::set_ready(bool ready) {
  impl_->ready.Set(ready ? 1 : 0);
}

void ProxyMetrics::buffer_budget_pause() {
  impl_->budget_pauses->Increment();
}

void ProxyMetrics::set_buffered_bytes(int64_t n) {
  impl_->buffered_bytes->Set(static_cast<double>(n));
}

void ProxyMetrics::add_held_resources(const HeldResources& d) {
  auto add = [](Gauge* g, int64_t n) {
    if (n > 0) g->Increment(static_cast<double>(n));
    if (n < 0) g->Decrement(static_cast<double>(-n));
  };
  add(impl_->sessions_live, d.sessions);
  add(impl_->in_flight, d.in_flight);
  add(impl_->upstreams_live, d.upstream_connections);
  add(impl_->pool_buffers, d.pooled_buffers);
  add(impl_->pool_bytes, d.pooled_bytes);
}

}  // namespace epochgate::metrics
