// proxy/app/listener_registry.h: which broker node ids have an epochgate listener
// (docs/architecture.md section 3), under run-time limits, and which listeners are still owed to
// the cluster. Decides: bind (synchronously, in the calling thread, so the
// port exists before a response naming it reaches a client), refuse (node id
// over broker_ports.max_node_id, listener count at broker_ports.max_listeners),
// retry a failed bind with backoff, and close the listener of a node the
// cluster has stopped naming for broker_ports.absent_grace_ms. Thread-safe.
// Never accepts connections (the Acceptor does) and never reads the config
// after construction (it gets its own copy of the numbers), so a reload on
// another thread cannot race it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/net/listen_socket.h"

namespace epochgate::proxy {

/// Node id used for the bootstrap listener.
inline constexpr int32_t kBootstrapNode = -1;

/// The numbers the registry enforces (from broker_ports.*).
struct ListenerLimits {
  std::string bind_host;            ///< address node listeners bind
  uint16_t port_base = 0;           ///< port of node n is base + n; 0 = ephemeral
  std::map<int32_t, uint16_t> explicit_ports;  ///< pinned nodes (never closed)
  int32_t max_node_id = 255;        ///< higher ids without an explicit port are refused
  uint32_t max_listeners = 1024;    ///< node listeners open at once (bootstrap excluded)
  uint32_t absent_grace_ms = 300000;  ///< close a listener whose node left this long ago
  uint32_t bind_retry_initial_ms = 250;  ///< first retry after a failed bind; doubles
  uint32_t bind_retry_max_ms = 5000;     ///< backoff cap
};

/// Why a node got no listener (metric label `reason`).
enum class Refusal { kNone, kMaxNodeId, kMaxListeners, kPortRule };
const char* refusal_name(Refusal r);

/// Owns the rule "node id -> listener" and its state; the descriptors
/// themselves go to the acceptor through Events.
class ListenerRegistry {
 public:
  /// Called with the registry's lock held, so events for one node arrive in
  /// order; a handler must only queue work, never call back into the registry.
  struct Events {
    /// A socket is bound and listening; ownership of `fd` passes to the handler.
    std::function<void(int32_t node_id, int fd, uint16_t port)> opened;
    /// The listener of `node_id` must stop accepting and be closed.
    std::function<void(int32_t node_id)> closed;
    /// A node was newly refused a listener (counted once per node).
    std::function<void(int32_t node_id, Refusal why)> refused;
    /// A bind failed (counted per attempt).
    std::function<void(int32_t node_id)> bind_failed;
  };

  ListenerRegistry(ListenerLimits limits, Events events);
  ~ListenerRegistry();

  /// Binds the bootstrap listener. false with `error` on failure.
  bool bind_bootstrap(const config::HostPort& listen, std::string& error);
  /// Binds the nodes with explicit ports (start-up). false with `error` on
  /// the first failure.
  bool bind_pinned(std::string& error);

  /// A node was learned or named again (Metadata broker, NodeEndpoints,
  /// FindCoordinator...): marks it present and returns its port, binding its
  /// listener first if it has none. nullopt when it is refused, or when its
  /// bind failed and the next retry is not due yet.
  std::optional<uint16_t> ensure(int32_t node_id, uint64_t now_ms);

  /// The brokers of one Metadata response: the cluster's current node set.
  /// Ensures each of them, and starts the absence clock of every other
  /// listener. An empty list says nothing (an error answer) and is ignored.
  void observe_brokers(const std::vector<int32_t>& node_ids, uint64_t now_ms);

  /// Retries due binds of present nodes and closes listeners (and forgets
  /// refusals) of nodes absent for absent_grace_ms. Call at next_due_ms().
  void tick(uint64_t now_ms);

  /// The earliest monotonic ms at which tick() has something to do: a
  /// present node's bind retry, or the end of a departed node's
  /// absent_grace_ms (pinned nodes never leave). nullopt when nothing waits;
  /// it changes only with the node set (observe_brokers, ensure) and a failed
  /// bind (Events::bind_failed), after which the caller asks again.
  std::optional<uint64_t> next_due_ms() const;

  /// Port of an existing listener (bootstrap: kBootstrapNode); never binds.
  std::optional<uint16_t> port_of(int32_t node_id) const;

  /// Empty when every node of the current node set that is owed a listener
  /// has one; otherwise why not ("node 3: bind 127.0.0.1:19003: Address
  /// already in use; retrying"). Refused nodes do not count: they are a limit,
  /// logged and counted, not a fault that a restart would fix.
  std::string unready_reason() const;

  /// Nodes of the current node set refused a listener, each with why
  /// (readiness checks whether one of them leads a partition).
  std::vector<std::pair<int32_t, Refusal>> refused_nodes() const;

  struct Counts {
    uint32_t listening = 0;    ///< node listeners open (bootstrap excluded)
    uint32_t bind_failed = 0;  ///< present nodes waiting for a bind retry
    uint32_t refused = 0;      ///< nodes remembered as refused
  };
  Counts counts() const;

  /// The limits in force.
  const ListenerLimits& limits() const { return limits_; }

  /// Forgets every listener (each one gets `closed`); used at shutdown.
  void close_all();

 private:
  enum class State { kListening, kBindFailed, kRefused };
  struct Node {
    State state = State::kRefused;
    Refusal refusal = Refusal::kNone;
    uint16_t port = 0;
    bool present = true;
    uint64_t absent_since_ms = 0;
    uint64_t retry_at_ms = 0;
    uint32_t retry_delay_ms = 0;
    uint32_t failures = 0;
    std::string error;  // last bind error
  };
  // Binds or refuses `n` (lock held). True when it listens afterwards.
  bool try_open(int32_t node_id, Node& n, uint64_t now_ms);
  std::optional<uint16_t> ensure_locked(int32_t node_id, uint64_t now_ms);
  uint32_t listening_locked() const;

  const ListenerLimits limits_;
  const Events events_;
  mutable std::mutex mu_;
  std::map<int32_t, Node> nodes_;
  uint16_t bootstrap_port_ = 0;
  bool bootstrap_bound_ = false;
  uint32_t listening_ = 0;
};

}  // namespace epochgate::proxy
