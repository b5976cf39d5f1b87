// metrics/proxy_metrics.cc: ProxyMetrics' typed methods over the `epochgate_*`
// families (metrics/families.def; their cached children are in
// metrics/proxy_metrics_impl.h). A call costs an array index plus an atomic
// add. Label sets are bounded by construction: API keys outside 0-94 are
// "unknown", node ids past the cap are "other", and string labels (reason,
// source, trigger) are interned up to a small cap. Never put client-chosen
// strings (topics, client ids) in a label here.
#include "metrics/proxy_metrics.h"

#include <chrono>

#include "codec/header.h"
#include "metrics/proxy_metrics_impl.h"
#include "metrics/reroute_metrics.h"
#include "metrics/stream_metrics.h"

namespace epochgate::metrics {

using prometheus::Counter;
using prometheus::Gauge;

ProxyMetrics::ProxyMetrics(std::shared_ptr<prometheus::Registry> registry)
    : impl_(std::make_unique<Impl>(std::move(registry))),
      reroute_(std::make_unique<RerouteMetrics>(*impl_->registry)),
      stream_(std::make_unique<StreamMetrics>(*impl_->registry)) {
  // Series an operator alerts on exist at 0 from the start, so rate() and
  // increase() see the first event instead of a series appearing from nowhere.
  for (std::size_t i = 0; i < kCloseReasonCount; ++i) {
    const auto reason = static_cast<CloseReason>(i);
    if (frame_error_seeded(reason)) frame_error_counter(close_reason_name(reason));
  }
  using namespace codec;
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

void ProxyMetrics::upstream_warm(bool hit) {
  (hit ? impl_->warm_hit : impl_->warm_miss)->Increment();
}

void ProxyMetrics::upstream_overdue(int16_t api_key) {
  const int slot = api_slot(api_key);
  child(impl_->overdue_children[slot], impl_->overdue, [&] {
    return prometheus::Labels{{"api", api_label(api_key)}};
  }).Increment();
}

void ProxyMetrics::upstream_latency(int16_t api_key, double seconds) {
  const int slot = api_slot(api_key);
  impl_->latency_child(slot, [&] {
    return prometheus::Labels{{"api", api_label(api_key)}};
  }).observe(seconds);
}

void ProxyMetrics::proxy_latency(double seconds) {
  impl_->proxy_latency->observe(seconds);
}

void ProxyMetrics::fold() {
  impl_->fold();
}

void ProxyMetrics::frame_error(CloseReason reason) {
  frame_error(close_reason_name(reason));
}

void ProxyMetrics::frame_error(std::string_view reason) {
  frame_error_counter(reason).Increment();
}

Counter& ProxyMetrics::frame_error_counter(std::string_view reason) {
  return interned_counter(impl_->frame_error_reasons, impl_->frame_error_children,
                          impl_->frame_errors, "reason", reason);
}

void ProxyMetrics::unexpected_response() {
  impl_->unexpected_responses->Increment();
}

void ProxyMetrics::backpressure_pause(Direction d) {
  impl_->backpressure_children[direction_index(d)]->Increment();
}

void ProxyMetrics::connection_closed_reason(CloseReason reason) {
  connection_closed_reason(close_reason_name(reason));
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

void ProxyMetrics::injected_epoch_answered(uint64_t n) {
  impl_->injected_epoch_answers.Increment(static_cast<double>(n));
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
