// proxy/app/listener_registry.cc
#include "proxy/app/listener_registry.h"

#include <unistd.h>

#include <algorithm>
#include <unordered_set>

#include "proxy/app/port_map.h"
#include "proxy/net/log_limited.h"

namespace epochgate::proxy {

namespace {
constexpr int kBacklog = 1024;
// Refusals remembered (so each node is logged and counted once). A broker can
// name any of 2^31 ids; past this many, refusals are still enforced but no
// longer remembered, and the rate-limited log line covers them.
constexpr size_t kMaxRemembered = 65536;
}  // namespace

const char* refusal_name(Refusal r) {
  switch (r) {
    case Refusal::kMaxNodeId:
      return "max_node_id";
    case Refusal::kMaxListeners:
      return "max_listeners";
    case Refusal::kPortRule:
      return "port_rule";
    case Refusal::kNone:
      break;
  }
  return "none";
}

ListenerRegistry::ListenerRegistry(ListenerLimits limits, Events events)
    : limits_(std::move(limits)), events_(std::move(events)) {}

ListenerRegistry::~ListenerRegistry() = default;

bool ListenerRegistry::bind_bootstrap(const config::HostPort& listen, std::string& error) {
  ListenSocket s;
  if (!open_listen_socket(listen.host, listen.port, kBacklog, s, error)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  bootstrap_port_ = s.port;
  bootstrap_bound_ = true;
  if (events_.opened) {
    events_.opened(kBootstrapNode, s.fd, s.port);
  } else {
    ::close(s.fd);
  }
  return true;
}

bool ListenerRegistry::bind_pinned(std::string& error) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [node, port] : limits_.explicit_ports) {
    Node& n = nodes_[node];
    if (!try_open(node, n, 0)) {
      error = n.error;
      return false;
    }
  }
  return true;
}

uint32_t ListenerRegistry::listening_locked() const { return listening_; }

bool ListenerRegistry::try_open(int32_t node_id, Node& n, uint64_t now_ms) {
  const bool pinned = limits_.explicit_ports.count(node_id) > 0;
  auto refuse = [&](Refusal why) {
    bool fresh = n.state != State::kRefused || n.refusal != why;
    n.state = State::kRefused;
    n.refusal = why;
    if (fresh && events_.refused) events_.refused(node_id, why);
    return false;
  };
  if (!pinned && node_id > limits_.max_node_id) return refuse(Refusal::kMaxNodeId);
  if (listening_ >= limits_.max_listeners) return refuse(Refusal::kMaxListeners);
  auto port = port_for_node(node_id, limits_.port_base, limits_.explicit_ports);
  if (!port) return refuse(Refusal::kPortRule);
  ListenSocket s;
  std::string error;
  if (!open_listen_socket(limits_.bind_host, *port, kBacklog, s, error)) {
    n.state = State::kBindFailed;
    n.error = std::move(error);
    n.failures++;
    n.retry_delay_ms = n.retry_delay_ms == 0
                           ? limits_.bind_retry_initial_ms
                           : std::min(limits_.bind_retry_max_ms, n.retry_delay_ms * 2);
    n.retry_at_ms = now_ms + n.retry_delay_ms;
    if (events_.bind_failed) events_.bind_failed(node_id);
    EPOCHGATE_PROXY_LOG(warn, "listener_bind",
                        "no listener for broker node {}: {}; retrying in {} ms (attempt {}); "
                        "readiness is false while the cluster names node {}",
                        node_id, n.error, n.retry_delay_ms, n.failures, node_id);
    return false;
  }
  if (n.failures > 0)
    spdlog::info("listener for broker node {} bound after {} failed attempts", node_id,
                 n.failures);
  n.state = State::kListening;
  n.refusal = Refusal::kNone;
  n.port = s.port;
  n.failures = 0;
  n.retry_delay_ms = 0;
  n.error.clear();
  ++listening_;
  if (events_.opened) {
    events_.opened(node_id, s.fd, s.port);
  } else {
    ::close(s.fd);
  }
  return true;
}

std::optional<uint16_t> ListenerRegistry::ensure_locked(int32_t node_id, uint64_t now_ms) {
  if (node_id < 0) return std::nullopt;
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) {
    Node fresh;
    if (nodes_.size() >= kMaxRemembered) {
      // Enforce without remembering: the node is refused or bound as usual.
      if (!try_open(node_id, fresh, now_ms)) return std::nullopt;
    }
    it = nodes_.emplace(node_id, std::move(fresh)).first;
    if (it->second.state == State::kListening) return it->second.port;
    it->second.present = true;
    if (!try_open(node_id, it->second, now_ms)) return std::nullopt;
    return it->second.port;
  }
  Node& n = it->second;
  n.present = true;
  n.absent_since_ms = 0;
  switch (n.state) {
    case State::kListening:
      return n.port;
    case State::kBindFailed:
      if (now_ms < n.retry_at_ms) return std::nullopt;
      break;
    case State::kRefused:
      // Only a count limit can lift (listeners of departed nodes close).
      if (n.refusal != Refusal::kMaxListeners || listening_ >= limits_.max_listeners)
        return std::nullopt;
      break;
  }
  if (!try_open(node_id, n, now_ms)) return std::nullopt;
  return n.port;
}

std::optional<uint16_t> ListenerRegistry::ensure(int32_t node_id, uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  return ensure_locked(node_id, now_ms);
}

void ListenerRegistry::observe_brokers(const std::vector<int32_t>& node_ids, uint64_t now_ms) {
  if (node_ids.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::unordered_set<int32_t> named(node_ids.begin(), node_ids.end());
  for (auto& [id, n] : nodes_) {
    if (named.count(id) == 0 && n.present) {
      n.present = false;
      n.absent_since_ms = now_ms;
    }
  }
  for (int32_t id : node_ids) ensure_locked(id, now_ms);
}

void ListenerRegistry::tick(uint64_t now_ms) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    const int32_t id = it->first;
    Node& n = it->second;
    const bool pinned = limits_.explicit_ports.count(id) > 0;
    if (!n.present && !pinned && now_ms - n.absent_since_ms >= limits_.absent_grace_ms) {
      if (n.state == State::kListening) {
        --listening_;
        EPOCHGATE_PROXY_LOG(info, "listener_closed",
                            "closing the listener of broker node {} (port {}): the cluster has "
                            "not named it for {} ms (broker_ports.absent_grace_ms)",
                            id, n.port, now_ms - n.absent_since_ms);
        if (events_.closed) events_.closed(id);
      }
      it = nodes_.erase(it);
      continue;
    }
    if (n.present && n.state == State::kBindFailed && now_ms >= n.retry_at_ms)
      try_open(id, n, now_ms);
    ++it;
  }
}

std::optional<uint64_t> ListenerRegistry::next_due_ms() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<uint64_t> next;
  auto at = [&](uint64_t t) { next = next ? std::min(*next, t) : t; };
  for (const auto& [id, n] : nodes_) {
    if (!n.present && limits_.explicit_ports.count(id) == 0)
      at(n.absent_since_ms + limits_.absent_grace_ms);
    else if (n.present && n.state == State::kBindFailed)
      at(n.retry_at_ms);
  }
  return next;
}

std::optional<uint16_t> ListenerRegistry::port_of(int32_t node_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (node_id == kBootstrapNode)
    return bootstrap_bound_ ? std::optional<uint16_t>(bootstrap_port_) : std::nullopt;
  auto it = nodes_.find(node_id);
  if (it == nodes_.end() || it->second.state != State::kListening) return std::nullopt;
  return it->second.port;
}

std::string ListenerRegistry::unready_reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  size_t failed = 0;
  for (const auto& [id, n] : nodes_) {
    if (!n.present || n.state != State::kBindFailed) continue;
    if (++failed == 1) out = "broker node " + std::to_string(id) + " has no listener (" + n.error + "); retrying";
  }
  if (failed > 1) out += " (and " + std::to_string(failed - 1) + " more nodes)";
  return out;
}

std::vector<std::pair<int32_t, Refusal>> ListenerRegistry::refused_nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<int32_t, Refusal>> out;
  for (const auto& [id, n] : nodes_) {
    if (n.present && n.state == State::kRefused) out.emplace_back(id, n.refusal);
  }
  return out;
}

ListenerRegistry::Counts ListenerRegistry::counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  Counts c;
  c.listening = listening_;
  for (const auto& [id, n] : nodes_) {
    if (n.state == State::kBindFailed && n.present) c.bind_failed++;
    if (n.state == State::kRefused) c.refused++;
  }
  return c;
}

void ListenerRegistry::close_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, n] : nodes_)
    if (n.state == State::kListening && events_.closed) events_.closed(id);
  nodes_.clear();
  listening_ = 0;
  if (bootstrap_bound_ && events_.closed) events_.closed(kBootstrapNode);
  bootstrap_bound_ = false;
}

}  // namespace epochgate::proxy
