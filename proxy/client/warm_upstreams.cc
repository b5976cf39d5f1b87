// proxy/client/warm_upstreams.cc
#include "proxy/client/warm_upstreams.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "metrics/proxy_metrics.h"
#include "proxy/client/upstream_dialer.h"
#include "proxy/net/clock.h"

namespace epochgate::proxy {

/// One broker node's kept connections and its one dialer. Owns the kept
/// connections (reading, so a broker's close is seen at once) and the
/// closing ones until their handles are closed.
struct WarmUpstreams::Node final : DialerOwner, ConnectionOwner {
  struct Ready {
    std::unique_ptr<Connection> conn;
    config::HostPort target;
    uint64_t since_ms = 0;
  };

  Node(WarmUpstreams& p, int32_t node_id) : pool(p), id(node_id) {}

  WarmUpstreams& pool;
  int32_t id;
  bool listed = true;  // in the latest set_nodes()
  std::unique_ptr<Dialer> dialer;
  bool dialing = false;
  std::vector<Ready> ready;  // oldest first
  std::vector<std::unique_ptr<Connection>> closing;
  uint64_t retry_at_ms = 0;  // no dial before this (back-off after a failure)
  uint32_t backoff_ms = 0;

  /// Starts one dial when fewer than wanted are kept and none is under way.
  void maybe_dial() {
    if (!listed || dialing || ready.size() >= pool.wanted() || now_ms() < retry_at_ms) return;
    if (pool.dialing_count() >= kMaxDials) return;
    auto addr = pool.ctx_.upstreams ? pool.ctx_.upstreams->upstream_of(id) : std::nullopt;
    if (!addr) return;  // learned at a later refresh
    if (!dialer) {
      WorkerContext& c = pool.ctx_;
      dialer = c.make_dialer ? c.make_dialer(*this)
                             : std::make_unique<UpstreamDialer>(c.loop, c.pool, *this, c.tls);
    }
    dialing = true;
    dialer->set_probe(true);
    dialer->dial({*addr}, pool.ctx_.config->limits.upstream_connect_timeout_ms, "epochgate");
  }

  void retire(std::unique_ptr<Connection> conn) {
    conn->set_owner(*this);
    Connection* raw = conn.get();
    closing.push_back(std::move(conn));
    raw->close();
  }

  void drop(size_t i) {
    std::unique_ptr<Connection> conn = std::move(ready[i].conn);
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(i));
    retire(std::move(conn));
  }

  void drop_all() {
    while (!ready.empty()) drop(ready.size() - 1);
    if (dialing && dialer) dialer->cancel();
    dialing = false;
  }

  size_t index_of(const Connection& c) const {
    for (size_t i = 0; i < ready.size(); ++i)
      if (ready[i].conn.get() == &c) return i;
    return ready.size();
  }

  // DialerOwner
  void on_dial_attempt_failed(const DialFailure& f) override {
    if (!pool.ctx_.metrics) return;
    pool.ctx_.metrics->upstream_connect_failure(id);
    if (f.stage == DialStage::kAnswer) pool.ctx_.metrics->upstream_unanswered(id);
  }

  void on_dialed(std::unique_ptr<Connection> conn, size_t, const ApiVersionRanges&) override {
    dialing = false;
    auto addr = pool.ctx_.upstreams ? pool.ctx_.upstreams->upstream_of(id) : std::nullopt;
    if (!listed || ready.size() >= pool.wanted() || !addr) {
      retire(std::move(conn));
      return;
    }
    conn->set_owner(*this);
    conn->start_reading();
    ready.push_back(Ready{std::move(conn), *addr, now_ms()});
    maybe_dial();
  }

  void on_dial_failed() override {
    dialing = false;
    back_off("dial failed");
  }

  /// The next dial waits: 1 s after the first failure, doubling to 30 s. A
  /// broker that refuses or closes every kept connection is not dialled in
  /// a loop; a kept connection handed to a client ends the back-off.
  void back_off(const char* why) {
    backoff_ms = backoff_ms == 0 ? kFirstBackoffMs : std::min(backoff_ms * 2, kMaxBackoffMs);
    retry_at_ms = now_ms() + backoff_ms;
    spdlog::debug("warm upstream for node {}: {}, next dial in {} ms", id, why, backoff_ms);
  }

  // ConnectionOwner: a kept connection. Nothing was asked on it since the
  // probe's answer, so any byte, close or error ends it.
  void on_readable(Connection& c) override { end(c); }
  void on_read_error(Connection& c, int) override { end(c); }
  void on_write_error(Connection& c, int) override { end(c); }
  void on_drained(Connection&) override {}
  void on_closed(Connection& c) override {
    for (auto it = closing.begin(); it != closing.end(); ++it) {
      if (it->get() == &c) {
        closing.erase(it);
        return;
      }
    }
  }

  void end(Connection& c) {
    size_t i = index_of(c);
    if (i >= ready.size()) return;
    drop(i);
    back_off("the broker closed a kept connection");
  }
};

WarmUpstreams::WarmUpstreams(WorkerContext& ctx) : ctx_(ctx) {}

WarmUpstreams::~WarmUpstreams() = default;

uint32_t WarmUpstreams::wanted() const {
  if (closed_ || !ctx_.config) return 0;
  if (ctx_.upstreams && ctx_.upstreams->clients_log_in_upstream()) return 0;
  return ctx_.config->limits.warm_upstreams_per_broker;
}

WarmUpstreams::Node* WarmUpstreams::node(int32_t node_id) {
  for (auto& n : nodes_)
    if (n->id == node_id) return n.get();
  if (nodes_.size() >= kMaxNodes) return nullptr;
  nodes_.push_back(std::make_unique<Node>(*this, node_id));
  return nodes_.back().get();
}

void WarmUpstreams::set_nodes(const std::vector<int32_t>& node_ids) {
  if (closed_) return;
  for (auto& n : nodes_) {
    n->listed = std::find(node_ids.begin(), node_ids.end(), n->id) != node_ids.end();
    if (!n->listed) n->drop_all();
  }
  for (int32_t id : node_ids) {
    Node* n = node(id);
    if (n == nullptr) continue;
    n->listed = true;
    n->maybe_dial();
  }
}

std::unique_ptr<Connection> WarmUpstreams::take(int32_t node_id, const config::HostPort& target) {
  if (wanted() == 0) return nullptr;
  Node* n = node(node_id);
  std::unique_ptr<Connection> found;
  while (n != nullptr && !found && !n->ready.empty()) {
    Node::Ready& r = n->ready.front();
    if (r.target == target && !r.conn->closing() && !r.conn->peer_closed() &&
        r.conn->input().empty()) {
      found = std::move(r.conn);
      n->ready.erase(n->ready.begin());
      found->stop_reading();
      n->backoff_ms = 0;
    } else {
      n->drop(0);  // for an address the node no longer has, or ending
    }
  }
  if (ctx_.metrics) ctx_.metrics->upstream_warm(found != nullptr);
  if (n != nullptr) n->maybe_dial();
  return found;
}

void WarmUpstreams::tick() {
  if (closed_) return;
  const uint32_t want = wanted();
  const uint64_t now = now_ms();
  const uint64_t max_idle = ctx_.config ? ctx_.config->limits.warm_upstream_max_idle_ms : 0;
  for (auto& n : nodes_) {
    // Oldest first: expired ones are at the front.
    while (!n->ready.empty() && now - n->ready.front().since_ms >= max_idle) n->drop(0);
    while (n->ready.size() > want) n->drop(n->ready.size() - 1);
    if (want == 0 && n->dialing && n->dialer) {
      n->dialer->cancel();
      n->dialing = false;
    }
    n->maybe_dial();
  }
}

void WarmUpstreams::close() {
  if (closed_) return;
  for (auto& n : nodes_) {
    n->listed = false;
    n->drop_all();
    if (n->dialer) n->dialer->close();
  }
  closed_ = true;
}

size_t WarmUpstreams::ready_count() const {
  size_t k = 0;
  for (const auto& n : nodes_) k += n->ready.size();
  return k;
}

size_t WarmUpstreams::dialing_count() const {
  size_t k = 0;
  for (const auto& n : nodes_) k += n->dialing ? 1 : 0;
  return k;
}

}  // namespace epochgate::proxy
