// proxy/client/warm_upstreams.h: one worker's pool of upstream connections
// dialled and answered before a client needs them. A client that opens its
// first connection to a broker's listener (a consumer told by a
// FENCED_LEADER_EPOCH hint that the leader moved to a broker it never
// talked to) would otherwise wait for epochgate's dial and ApiVersions probe
// before its first request goes up; with a kept connection it goes at once.
// A kept connection went through exactly what a session's own dial does
// (resolve, connect, upstream TLS, epochgate's ApiVersions probe) and carries
// nothing of any client, so handing it to a session changes no byte the
// session exchanges, only when. Nothing is kept while clients log in to the
// brokers with SASL themselves: their own ApiVersions must come first.
// Bounds: limits.warm_upstreams_per_broker connections per broker node, at
// most one dial per node at a time, a back-off after a failed dial.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <vector>

#include "codec/api_version_ranges.h"
#include "config/config.h"
#include "proxy/core/dialer.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/connection.h"

namespace epochgate::proxy {

/// Keeps up to limits.warm_upstreams_per_broker answered connections per
/// broker node for one worker loop. All calls on that loop's thread.
class WarmUpstreams {
 public:
  /// Node ids past this many (in the order first seen) are not warmed: a
  /// bound on the pool's connections and state for very large clusters,
  /// whose other brokers' sessions dial as without the pool.
  static constexpr size_t kMaxNodes = 64;
  /// Dials under way at once over all nodes, so a metadata answer naming
  /// many new brokers opens no burst of sockets; the rest wait for tick().
  static constexpr size_t kMaxDials = 8;
  /// First wait (ms) after a failed dial before the next; doubles to kMaxBackoffMs.
  static constexpr uint32_t kFirstBackoffMs = 1000;
  static constexpr uint32_t kMaxBackoffMs = 30000;

  /// Descriptors one worker's pool can hold at most with `per_broker`
  /// connections per node (limits.warm_upstreams_per_broker): the kept
  /// connections of kMaxNodes nodes and kMaxDials dials under way; 0 when
  /// the pool is off.
  static constexpr uint64_t max_descriptors(uint32_t per_broker) {
    return per_broker == 0 ? 0 : uint64_t{per_broker} * kMaxNodes + kMaxDials;
  }

  /// Dials with ctx.make_dialer when set (tests), else an UpstreamDialer over
  /// ctx.loop with ctx.tls; addresses from ctx.upstreams, settings from
  /// ctx.config (read at each use, so a reload applies). `ctx` outlives it.
  explicit WarmUpstreams(WorkerContext& ctx);
  ~WarmUpstreams();
  WarmUpstreams(const WarmUpstreams&) = delete;
  WarmUpstreams& operator=(const WarmUpstreams&) = delete;

  /// The cluster's broker node ids (a Metadata answer's brokers): these are
  /// kept warm; connections to nodes no longer listed are closed.
  void set_nodes(const std::vector<int32_t>& node_ids);
  /// A connection to `node_id` dialled to `target` and answered, or null
  /// (none ready, the pool off, or kept for an older address). Its reading
  /// is stopped and nothing of it is in its input; the caller sets itself as
  /// owner. A refill starts at once. Counts a hit or miss.
  std::unique_ptr<Connection> take(int32_t node_id, const config::HostPort& target);
  /// Periodic upkeep (the worker's sweep, about once a second): closes kept
  /// connections idle past limits.warm_upstream_max_idle_ms, applies a
  /// changed pool size, and starts the dials that are due.
  void tick();
  /// Closes every kept connection and dialer; nothing dials afterwards.
  /// The loop must run until their handles are closed; idempotent.
  void close();
  /// Kept (ready) connections, over all nodes.
  size_t ready_count() const;
  /// Dials under way, over all nodes (at most one per node).
  size_t dialing_count() const;

 private:
  struct Node;
  Node* node(int32_t node_id);
  /// Connections wanted per node now (0 when off or SASL passthrough).
  uint32_t wanted() const;

  WorkerContext& ctx_;
  std::vector<std::unique_ptr<Node>> nodes_;
  bool closed_ = false;
};

}  // namespace epochgate::proxy
