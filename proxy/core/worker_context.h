// proxy/core/worker_context.h: what every session on one event loop shares: the
// loop, its buffer pool, the current config, metrics, and the application
// services (listeners, upstream routing). Lives on the worker thread.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/core/dialer.h"
#include "proxy/core/endpoint_mapper.h"
#include "proxy/net/buffer_budget.h"
#include "proxy/net/buffer_pool.h"
#include "proxy/net/read_pacer.h"
#include "proxy/net/splice_pipe.h"
#include "proxy/tls/tls_services.h"

namespace epochgate::metrics {
class ProxyMetrics;
}

namespace epochgate::proxy {

class FencingHooks;
class Rerouter;
class WarmUpstreams;

/// Where a session's upstream connection goes: a node's broker address, or
/// the bootstrap list (node id -1), tried in order.
class UpstreamDirectory {
 public:
  virtual ~UpstreamDirectory() = default;
  /// Upstream broker address of `node_id`, if known.
  virtual std::optional<config::HostPort> upstream_of(int32_t node_id) const = 0;
  /// Configured bootstrap brokers.
  virtual std::vector<config::HostPort> bootstrap() const = 0;
  /// Asks for an urgent metadata refresh (node address unknown).
  virtual void request_refresh(const char* trigger) = 0;
  /// True when clients log in to the brokers with SASL themselves, through
  /// epochgate: `upstream_sasl` is set for epochgate's own connections and
  /// not lent to clients, or, without it, the refresher saw the brokers
  /// close the connection at its Metadata request as SASL listeners do.
  /// Such a client's ApiVersions must be the first request on its upstream
  /// connection (Dialer::set_probe). Any thread.
  virtual bool clients_log_in_upstream() const { return false; }
};

/// Per-worker shared state. Sessions hold a reference; it outlives them.
struct WorkerContext {
  uv_loop_t* loop = nullptr;
  int worker_index = 0;
  BufferPool pool{64 * 1024, 64};
  std::shared_ptr<const config::Config> config;
  metrics::ProxyMetrics* metrics = nullptr;
  EndpointMapper* endpoints = nullptr;
  UpstreamDirectory* upstreams = nullptr;
  FencingHooks* fencing = nullptr;  ///< null: policy not wired (pass-through proxy)
  BufferBudget* budget = nullptr;   ///< process-wide buffer memory budget (may be null)
  ReadPacer* pacer = nullptr;       ///< this loop's read fairness (may be null)
  /// This loop's pipe for splicing record bytes socket to socket (made on
  /// first use; empty between callbacks, so one serves every session).
  SplicePipe splice_pipe;
  Rerouter* rerouter = nullptr;     ///< this loop's Produce rerouting (null: never rerouted)
  /// This loop's upstream connections dialled ahead of need (null: none).
  WarmUpstreams* warm = nullptr;
  tls::TlsServices tls;             ///< client-facing and upstream TLS (all null: off)
  /// Asks the worker to re-check sessions paused by the budget soon.
  std::function<void()> budget_recheck;
  /// Makes a session's upstream dialer; unset: UpstreamDialer over TCP.
  /// Unit tests hand sessions in-memory connections through it.
  std::function<std::unique_ptr<Dialer>(DialerOwner&)> make_dialer;
};

}  // namespace epochgate::proxy
