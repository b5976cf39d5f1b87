// metrics/proxy_metrics.h: every Prometheus metric epochgate exports, behind
// typed methods so the data path never builds label maps. Labels are bounded:
// api (the 95 known API keys, else "unknown"), node (broker node id, capped),
// direction, side, reason, mode, source, trigger, result. All methods are
// thread-safe (prometheus-cpp metrics are atomic) and cheap: children are
// looked up once and cached.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "metrics/close_reason.h"
#include "metrics/side.h"

namespace prometheus {
class Counter;
class Registry;
}

namespace epochgate::metrics {

class RerouteMetrics;
class StreamMetrics;

/// What the proxy's workers hold in memory that a client connection made
/// (counts, not bytes, except `pooled_bytes`). Used as a change to add.
struct HeldResources {
  int64_t sessions = 0;              ///< client sessions not yet freed (open or closing)
  int64_t in_flight = 0;             ///< requests those sessions owe their clients
  int64_t upstream_connections = 0;  ///< their upstream connections, dialing, open or closing
  int64_t pooled_buffers = 0;        ///< buffers the workers' pools keep for reuse
  int64_t pooled_bytes = 0;          ///< bytes of those buffers
};

/// Typed front for the `epochgate_*` metrics (README "Metrics" lists them).
class ProxyMetrics {
 public:
  /// Registers every family in `registry`; the registry must outlive this.
  explicit ProxyMetrics(std::shared_ptr<prometheus::Registry> registry);
  ~ProxyMetrics();
  ProxyMetrics(const ProxyMetrics&) = delete;
  ProxyMetrics& operator=(const ProxyMetrics&) = delete;

  std::shared_ptr<prometheus::Registry> registry() const;

  // Traffic. epochgate_requests_total{api}, epochgate_responses_total{api}
  void request(int16_t api_key);
  void response(int16_t api_key);
  /// epochgate_bytes_total{direction}
  void bytes(Direction d, uint64_t n);
  /// epochgate_connections_active{side,node} (gauge), epochgate_connections_total{side,node}.
  /// node -1 is the bootstrap listener / bootstrap upstream.
  void connection_opened(Side s, int32_t node_id);
  void connection_closed(Side s, int32_t node_id);
  /// epochgate_upstream_connect_failures_total{node}
  void upstream_connect_failure(int32_t node_id);
  /// epochgate_upstream_unanswered_total{node}: connected, no ApiVersions answer in time.
  void upstream_unanswered(int32_t node_id);
  /// epochgate_upstream_warm_total{outcome}: a broker-listener session's
  /// upstream came from the warm pool (`hit`) or was dialled (`miss`).
  void upstream_warm(bool hit);
  /// epochgate_upstream_overdue_requests_total{api}: a forwarded request unanswered
  /// far past its own deadline (counted once per request).
  void upstream_overdue(int16_t api_key);
  /// epochgate_upstream_latency_seconds{api}: request written upstream -> response read.
  void upstream_latency(int16_t api_key, double seconds);
  /// epochgate_proxy_latency_seconds: time epochgate itself held a request and its response.
  void proxy_latency(double seconds);
  /// Moves the latency observations made since the last call into the
  /// exposed histograms (metrics/folded_histogram.h): every scrape calls it
  /// before collecting the registry (AdminHandlers::metrics_from).
  void fold();
  /// epochgate_frame_errors_total{reason}: `reason`'s name (metrics/close_reason.h).
  void frame_error(CloseReason reason);
  /// The same with a free label value: bounded by an interner (past 32 values
  /// "other"); the proxy passes a CloseReason.
  void frame_error(std::string_view reason);
  /// epochgate_unexpected_responses_total: responses to requests that expect none (acks=0).
  void unexpected_response();
  /// epochgate_backpressure_pauses_total{direction}: reads paused on a high watermark.
  void backpressure_pause(Direction d);
  /// epochgate_connections_closed_total{reason}: why a proxied connection closed,
  /// by `reason`'s name (metrics/close_reason.h).
  void connection_closed_reason(CloseReason reason);
  /// The same with a free label value, bounded like frame_error's.
  void connection_closed_reason(std::string_view reason);
  /// epochgate_api_versions_capped_total: ApiVersions responses whose ranges were capped.
  void api_versions_capped();
  /// epochgate_addresses_rewritten_total{api}: broker endpoints rewritten in responses.
  void addresses_rewritten(int16_t api_key, uint64_t n);

  /// epochgate_buffer_budget_pauses_total: client reads paused by the global buffer budget.
  void buffer_budget_pause();
  /// epochgate_buffered_bytes (gauge): connection buffer bytes held, all connections.
  void set_buffered_bytes(int64_t n);
  /// Adds `delta` to the gauges epochgate_sessions_live,
  /// epochgate_in_flight_requests, epochgate_upstream_connections_live,
  /// epochgate_buffer_pool_buffers and epochgate_buffer_pool_bytes. Each
  /// worker adds the change since its previous call, so the gauges are
  /// process-wide sums (a worker publishes about once a second).
  void add_held_resources(const HeldResources& delta);

  // Operations.
  /// epochgate_config_reloads_total{result="success|failure"}
  void config_reload(bool success);
  /// epochgate_build_info{version} = 1 and epochgate_start_time_seconds, set once.
  void set_build_info(std::string_view version, double start_time_seconds);
  /// epochgate_ready (gauge, 0/1): mirror of /readyz, so alerts need no probe.
  /// Also exported by this class: epochgate_config_last_reload_successful and
  /// epochgate_config_last_reload_success_timestamp_seconds, kept by config_reload().
  void set_ready(bool ready);

  // Fencing (the fencing issue).
  /// epochgate_fenced_partitions_total{api,reason,mode}
  void fenced_partition(int16_t api_key, std::string_view reason, std::string_view mode);
  /// epochgate_hints_total{source="synthesized|backfilled|rewritten"}
  void hint(std::string_view source);
  /// epochgate_epochs_injected_total
  void epoch_injected(uint64_t n = 1);
  /// epochgate_injected_epoch_answers_total: `n` partitions answered
  /// NOT_LEADER_OR_FOLLOWER in place of the broker's epoch error for an
  /// epoch epochgate injected.
  void injected_epoch_answered(uint64_t n);
  /// epochgate_metadata_refreshes_total{trigger="periodic|urgent|no_epoch|startup"}
  void metadata_refresh(std::string_view trigger);
  /// epochgate_metadata_refresh_errors_total{reason}: one refresh round in
  /// which every broker failed; `reason` is one of unreachable,
  /// closed_at_metadata, sasl_login, request (bounded by the caller).
  void metadata_refresh_failed(std::string_view reason);
  /// epochgate_metadata_last_success_timestamp_seconds: the refresher
  /// learned a Metadata answer at `unix_seconds`.
  void metadata_refreshed(double unix_seconds);
  /// epochgate_metadata_view_age_seconds: seconds since that answer.
  void set_view_age(double seconds);
  /// epochgate_view_partitions (gauge)
  void set_view_partitions(int64_t n);
  /// epochgate_view_topics_forgotten_total: `n` topics left the view after
  /// refresher.topic_idle_ms with no client request naming them.
  void view_topics_forgotten(uint64_t n);
  /// One SASL login on epochgate's own connection (`side` "own"); the
  /// mechanism is one of the four configurable names, so labels stay bounded.
  void sasl_authentication(std::string_view side, std::string_view mechanism, bool ok,
                           bool reauthentication);
  /// Seconds until the own SASL session ends (0: none or no lifetime).
  void set_sasl_session_expiry(double seconds);
  /// epochgate_view_epoch_disputes_total: `n` entries stopped fencing because
  /// the cluster repeatedly reported a lower epoch for the same topic id.
  void view_epochs_disputed(uint64_t n);
  /// epochgate_view_epoch_rollbacks_total: `n` entries moved back to the
  /// lower epoch the cluster confirmed.
  void view_epochs_rolled_back(uint64_t n);
  /// epochgate_version_downgrades_total{api}: KIP-951 bridging (v10->v9, v16->v15).
  void version_downgrade(int16_t api_key);
  /// The epochgate_reroute* families (metrics/reroute_metrics.h).
  RerouteMetrics& reroute() { return *reroute_; }
  /// The streamed-response families (metrics/stream_metrics.h).
  StreamMetrics& stream() { return *stream_; }

 private:
  struct Impl;
  prometheus::Counter& frame_error_counter(std::string_view reason);
  prometheus::Counter& fenced_counter(int16_t api_key, std::string_view reason,
                                      std::string_view mode);
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<RerouteMetrics> reroute_;
  std::unique_ptr<StreamMetrics> stream_;
};

}  // namespace epochgate::metrics
