// proxy/client/kafka_client_pool.cc
#include "proxy/client/kafka_client_pool.h"

#include <algorithm>

namespace epochgate::proxy {

KafkaClientPool::KafkaClientPool(uv_loop_t* loop, BufferPool& pool, KafkaClientOptions base,
                                 size_t max_nodes, KafkaClientObserver* observer)
    : loop_(loop), pool_(pool), base_(std::move(base)), max_nodes_(max_nodes), observer_(observer) {
  uv_timer_init(loop_, &reap_);
  reap_.data = this;
}

KafkaClientPool::~KafkaClientPool() = default;

KafkaClient* KafkaClientPool::client(int32_t node_id, const config::HostPort& address) {
  if (closed_) return nullptr;
  auto it = clients_.find(node_id);
  if (it != clients_.end()) {
    if (it->second.address == address) return it->second.client.get();
    std::unique_ptr<KafkaClient> old = std::move(it->second.client);
    clients_.erase(it);
    old->disconnect("node " + std::to_string(node_id) + " moved to " + address.to_string());
    retire(std::move(old));
  }
  if (clients_.size() >= max_nodes_) return nullptr;
  KafkaClientOptions o = base_;
  o.targets = {address};
  auto c = std::make_unique<KafkaClient>(loop_, pool_, std::move(o), observer_);
  c->set_tls(tls_);
  KafkaClient* raw = c.get();
  clients_.emplace(node_id, Entry{address, std::move(c)});
  return raw;
}

void KafkaClientPool::forget(int32_t node_id) {
  auto it = clients_.find(node_id);
  if (it == clients_.end()) return;
  std::unique_ptr<KafkaClient> c = std::move(it->second.client);
  clients_.erase(it);
  retire(std::move(c));
}

void KafkaClientPool::retire(std::unique_ptr<KafkaClient> client) {
  KafkaClient* raw = client.get();
  retiring_.push_back(std::move(client));
  raw->close([this, raw] {
    dead_.push_back(raw);
    if (!reap_closed_) uv_timer_start(&reap_, &KafkaClientPool::on_reap, 0, 0);
  });
}

void KafkaClientPool::on_reap(uv_timer_t* t) {
  auto* p = static_cast<KafkaClientPool*>(t->data);
  for (KafkaClient* d : p->dead_) {
    p->retiring_.erase(std::remove_if(p->retiring_.begin(), p->retiring_.end(),
                                      [d](const auto& c) { return c.get() == d; }),
                       p->retiring_.end());
  }
  p->dead_.clear();
  p->maybe_closed();
}

void KafkaClientPool::close(std::function<void()> done) {
  if (closed_) return;
  closed_ = true;
  on_closed_ = std::move(done);
  std::map<int32_t, Entry> all = std::move(clients_);
  clients_.clear();
  for (auto& [id, e] : all) retire(std::move(e.client));
  maybe_closed();
}

void KafkaClientPool::maybe_closed() {
  if (!closed_ || !retiring_.empty() || reap_closed_) return;
  reap_closed_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&reap_), [](uv_handle_t* h) {
    auto* p = static_cast<KafkaClientPool*>(h->data);
    if (p->on_closed_) {
      auto cb = std::move(p->on_closed_);
      cb();
    }
  });
}

}  // namespace epochgate::proxy
