// metrics/listener_metrics.h: the `epochgate_*` families about listening
// sockets, accepting, descriptors and the admin server's connection slots.
// Label sets are fixed (state, reason); never a node id or a peer address.
// Counters are thread-safe; gauges are set by the control loop.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

namespace prometheus {
class Registry;
}

namespace epochgate::metrics {

/// Families registered once per process on the shared registry.
class ListenerMetrics {
 public:
  explicit ListenerMetrics(std::shared_ptr<prometheus::Registry> registry);
  ~ListenerMetrics();

  /// epochgate_listeners{state="listening"|"bind_failed"|"refused"}: node
  /// listeners by state (bootstrap excluded).
  void set_listeners(uint32_t listening, uint32_t bind_failed, uint32_t refused);
  /// epochgate_listeners_refused_total{reason="max_node_id"|"max_listeners"|
  /// "port_rule"}: nodes refused a listener (once per node).
  void listener_refused(std::string_view reason);
  /// epochgate_listener_bind_failures_total: failed binds, retries included.
  void bind_failure();
  /// epochgate_listeners_closed_total: listeners closed because their node
  /// left the cluster (broker_ports.absent_grace_ms).
  void listener_closed();
  /// epochgate_accept_errors_total{reason="emfile"|"enfile"|"enobufs"|
  /// "enomem"|"fd_reserve"|"other"}: failed accept(2) calls on client
  /// listeners, and pauses to keep the descriptor reserve.
  void accept_error(std::string_view reason);
  /// epochgate_fd_limit (soft RLIMIT_NOFILE in force) and
  /// epochgate_fds_needed (what the configured limits can use).
  void set_fd_limit(uint64_t limit, uint64_t needed);
  /// epochgate_workers: event-loop threads running.
  void set_workers(unsigned n);
  /// epochgate_buffer_budget_bytes: the buffer budget in force, bytes.
  void set_buffer_budget(uint64_t bytes);
  /// epochgate_admin_connections_evicted_total{reason="idle"|"busy"}: admin
  /// connections closed to make room for a new one (probes stay answerable).
  void admin_evicted(std::string_view reason);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace epochgate::metrics
