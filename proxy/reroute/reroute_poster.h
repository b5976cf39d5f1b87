// proxy/reroute/reroute_poster.h: one worker's acks=0 reroutes (docs/rerouting.md,
// "acks=0"): posts a Produce's stale partitions to their leader on
// connections that carry nothing but these posts, one per leader, apart
// from the acks>=1 reroutes' connections. A broker that answers an acks=0
// Produce anyway (the librdkafka mock does) or closes the connection after
// an error on one (real brokers do) can then fail only other posts, never
// a write whose client waits for an answer. Counts `delivered` once a
// post's bytes are written, `upstream_failed` when they never were.
// Loop thread only; never blocks; owns its pool and nothing else.
#pragma once

#include <functional>
#include <memory>

#include "proxy/client/kafka_client_pool.h"
#include "proxy/core/reroute_plan.h"
#include "proxy/core/worker_context.h"

namespace epochgate::proxy {

/// acks=0 reroutes of one worker.
class ReroutePoster : private KafkaClientObserver {
 public:
  explicit ReroutePoster(WorkerContext& ctx);
  ~ReroutePoster() override;
  ReroutePoster(const ReroutePoster&) = delete;
  ReroutePoster& operator=(const ReroutePoster&) = delete;

  /// Posts every target of `plan` (acks=0) to its leader; nothing is
  /// tracked by the order guard. `refuse` (an identity reason) or
  /// `enabled` false refuses all. True when every target was accepted by
  /// its leader's client (the client's connection need not be closed);
  /// false when none was posted because of a refusal or an unreadable
  /// batch, or when some leader's client refused.
  bool post_all(const std::shared_ptr<ReroutePlan>& plan, const char* refuse, bool enabled);
  /// Closes the post connections; `done` runs once they are gone.
  void close(std::function<void()> done) { pool_.close(std::move(done)); }

 private:
  void on_post_answered() override;
  void fell_back(const char* reason, size_t n);

  WorkerContext& ctx_;
  KafkaClientPool pool_;
};

}  // namespace epochgate::proxy
