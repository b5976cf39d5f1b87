// proxy/client/kafka_client_pool.h: one KafkaClient per broker node id on one loop,
// for requests that must reach one particular broker (a partition's leader):
// created on first use, replaced when the node's address changes, closed
// when the node leaves the cluster. Bounded: at most max_nodes clients, each
// with its own max_outstanding. Never picks a node itself and never moves a
// request from one node's client to another's.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "config/config.h"
#include "proxy/client/kafka_client.h"

namespace epochgate::proxy {

/// Per-node KafkaClients (the BrokerClients of epochgate). All calls on
/// the loop thread.
class KafkaClientPool final : public BrokerClients {
 public:
  /// `base` applies to every client (its targets are replaced by the node's
  /// address); at most `max_nodes` clients exist at once.
  KafkaClientPool(uv_loop_t* loop, BufferPool& pool, KafkaClientOptions base, size_t max_nodes,
                  KafkaClientObserver* observer = nullptr);
  ~KafkaClientPool() override;
  KafkaClientPool(const KafkaClientPool&) = delete;
  KafkaClientPool& operator=(const KafkaClientPool&) = delete;

  /// The client of `node_id` at `address`, created on first use. A node
  /// known at another address gets a new client (the old one's requests
  /// fail with kDisconnected). nullptr when the pool is closed or holds
  /// max_nodes clients already.
  KafkaClient* client(int32_t node_id, const config::HostPort& address) override;
  /// Closes the client of a node the cluster no longer lists (its requests
  /// fail with kClosed). No-op for an unknown node.
  void forget(int32_t node_id) override;
  /// upstream_tls for clients created from now on (all null: plain TCP).
  void set_tls(const tls::TlsServices& tls) { tls_ = tls; }
  /// Clients in use (not counting ones still closing).
  size_t size() const { return clients_.size(); }
  /// Closes every client; `done` runs once all are gone. Idempotent.
  void close(std::function<void()> done) override;

 private:
  struct Entry {
    config::HostPort address;
    std::unique_ptr<KafkaClient> client;
  };
  void retire(std::unique_ptr<KafkaClient> client);
  static void on_reap(uv_timer_t* t);
  void maybe_closed();

  uv_loop_t* loop_;
  BufferPool& pool_;
  KafkaClientOptions base_;
  size_t max_nodes_;
  KafkaClientObserver* observer_;
  tls::TlsServices tls_;
  std::map<int32_t, Entry> clients_;
  std::vector<std::unique_ptr<KafkaClient>> retiring_;  // closing, not yet done
  std::vector<KafkaClient*> dead_;                      // done; freed by reap_
  uv_timer_t reap_;  // frees dead clients outside their own callbacks
  bool closed_ = false;
  bool reap_closed_ = false;
  std::function<void()> on_closed_;
};

}  // namespace epochgate::proxy
