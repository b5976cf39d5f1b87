// tests/proxy/app/listener_registry_test.cc: the listener rules a user relies on,
// checked on real loopback sockets: ids over broker_ports.max_node_id and
// listeners past broker_ports.max_listeners are refused (once each) while the
// others listen; the listener of a node the cluster stopped naming closes
// after the grace period (its port accepts no more); a failed bind is retried
// with backoff and readiness follows the current node set.
#include "proxy/app/listener_registry.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <vector>

namespace epochgate::proxy {
namespace {

bool can_connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// Plays the acceptor: keeps each opened descriptor until `closed` says so.
struct Recorder {
  std::map<int32_t, int> fds;
  std::map<int32_t, int> refused;  // node -> times refused
  int opened = 0;
  int closed = 0;
  int bind_failures = 0;
  ~Recorder() {
    for (auto& [n, fd] : fds) ::close(fd);
  }
  ListenerRegistry::Events events() {
    ListenerRegistry::Events ev;
    ev.opened = [this](int32_t node, int fd, uint16_t) {
      ++opened;
      fds[node] = fd;
    };
    ev.closed = [this](int32_t node) {
      ++closed;
      if (auto it = fds.find(node); it != fds.end()) {
        ::close(it->second);
        fds.erase(it);
      }
    };
    ev.refused = [this](int32_t node, Refusal) { ++refused[node]; };
    ev.bind_failed = [this](int32_t) { ++bind_failures; };
    return ev;
  }
};

ListenerLimits loopback_limits() {
  ListenerLimits l;
  l.bind_host = "127.0.0.1";
  l.port_base = 0;  // ephemeral
  return l;
}

std::vector<int32_t> ids(int32_t from, int32_t to) {
  std::vector<int32_t> v;
  for (int32_t i = from; i <= to; ++i) v.push_back(i);
  return v;
}

TEST(ListenerRegistry, TenThousandNodesOpenOnlyTheIdsUnderMaxNodeId) {
  Recorder rec;
  ListenerLimits l = loopback_limits();
  l.max_node_id = 7;
  ListenerRegistry reg(l, rec.events());
  reg.observe_brokers(ids(0, 9999), 1000);
  EXPECT_EQ(rec.opened, 8);
  EXPECT_EQ(reg.counts().listening, 8u);
  EXPECT_EQ(rec.refused.size(), 9992u);
  for (int32_t n = 0; n <= 7; ++n) {
    auto port = reg.port_of(n);
    ASSERT_TRUE(port) << n;
    EXPECT_TRUE(can_connect(*port)) << n;
  }
  EXPECT_FALSE(reg.port_of(8));
  EXPECT_FALSE(reg.ensure(9999, 1001));
  // The same answer again refuses nobody anew (logged and counted once).
  reg.observe_brokers(ids(0, 9999), 2000);
  for (const auto& [n, times] : rec.refused) ASSERT_EQ(times, 1) << n;
  EXPECT_EQ(rec.opened, 8);
  // Refusals are a limit, not a fault: readiness is not affected.
  EXPECT_EQ(reg.unready_reason(), "");
}

TEST(ListenerRegistry, MaxListenersCapsTheCountAndFreedSlotsAreReused) {
  Recorder rec;
  ListenerLimits l = loopback_limits();
  l.max_listeners = 2;
  l.absent_grace_ms = 100;
  ListenerRegistry reg(l, rec.events());
  reg.observe_brokers({0, 1, 2, 3}, 1000);
  EXPECT_EQ(reg.counts().listening, 2u);
  EXPECT_TRUE(reg.port_of(0) && reg.port_of(1));
  EXPECT_FALSE(reg.port_of(2));
  // Nodes 0 and 1 leave; once their grace is over, 2 and 3 get the slots.
  reg.observe_brokers({2, 3}, 2000);
  reg.tick(2100);
  EXPECT_EQ(rec.closed, 2);
  reg.observe_brokers({2, 3}, 2200);
  ASSERT_TRUE(reg.port_of(2));
  ASSERT_TRUE(reg.port_of(3));
  EXPECT_TRUE(can_connect(*reg.port_of(3)));
}

TEST(ListenerRegistry, ListenerOfANodeThatLeftClosesAfterTheGrace) {
  Recorder rec;
  ListenerLimits l = loopback_limits();
  l.absent_grace_ms = 5000;
  ListenerRegistry reg(l, rec.events());
  reg.observe_brokers({1, 2}, 1000);
  uint16_t port2 = reg.port_of(2).value();
  reg.observe_brokers({1}, 2000);
  reg.tick(6999);
  EXPECT_TRUE(reg.port_of(2)) << "closed before the grace period ended";
  EXPECT_TRUE(can_connect(port2));
  reg.tick(7000);
  EXPECT_FALSE(reg.port_of(2));
  EXPECT_EQ(rec.closed, 1);
  EXPECT_FALSE(can_connect(port2)) << "the departed node's port still accepts";
  EXPECT_TRUE(reg.port_of(1));
  // Named again later: a listener again.
  reg.observe_brokers({1, 2}, 8000);
  EXPECT_TRUE(reg.port_of(2));
}

// The app arms its one-shot timer for next_due_ms(): it must name the
// moment tick() closes a departed node's listener, and nothing once no node
// waits for anything.
TEST(ListenerRegistry, NextDueIsWhenADepartedNodesGraceEnds) {
  Recorder rec;
  ListenerLimits l = loopback_limits();
  l.absent_grace_ms = 5000;
  ListenerRegistry reg(l, rec.events());
  EXPECT_FALSE(reg.next_due_ms());
  reg.observe_brokers({1, 2, 3}, 1000);
  EXPECT_FALSE(reg.next_due_ms()) << "every node is present and listening";
  reg.observe_brokers({1, 3}, 2000);
  reg.observe_brokers({1}, 3000);
  EXPECT_EQ(reg.next_due_ms(), 7000u);
  reg.tick(7000);
  EXPECT_EQ(rec.closed, 1);
  EXPECT_EQ(reg.next_due_ms(), 8000u);
  reg.ensure(3, 7500);  // named again: nothing left to wait for
  EXPECT_FALSE(reg.next_due_ms());
  EXPECT_EQ(rec.closed, 1);
}

TEST(ListenerRegistry, NamedAgainWithinTheGraceKeepsTheListener) {
  Recorder rec;
  ListenerLimits l = loopback_limits();
  l.absent_grace_ms = 5000;
  ListenerRegistry reg(l, rec.events());
  reg.observe_brokers({1, 2}, 1000);
  reg.observe_brokers({1}, 2000);
  reg.ensure(2, 4000);  // a response names node 2 again
  reg.tick(9000);
  EXPECT_TRUE(reg.port_of(2));
  EXPECT_EQ(rec.closed, 0);
}

// Keeps a loopback port from other users without listening on it: a socket
// bound with SO_REUSEADDR that never listens. Ephemeral connects and binds
// without SO_REUSEADDR skip the port, while the registry's listener (it sets
// SO_REUSEADDR, see proxy/net/listen_socket.cc) may still bind and listen on it
// (socket(7): such a bind fails only against an active listener). This removes
// the race of "probe a free port, close it, hope nobody takes it".
class ReservedPort {
 public:
  // port 0: an ephemeral port; otherwise that port (ok() is false if taken).
  explicit ReservedPort(uint16_t port = 0) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ReservedPort(const ReservedPort&) = delete;
  ReservedPort& operator=(const ReservedPort&) = delete;
  ~ReservedPort() { ::close(fd_); }
  bool ok() const { return port_ != 0; }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// Holds a loopback port busy (a listener, so the registry's bind fails);
// release() closes the listener but keeps the port reserved, so the
// registry's next bind attempt gets it and nobody else does meanwhile.
class BusyPort {
 public:
  explicit BusyPort(uint16_t port = 0) : reserved_(port) {
    if (!reserved_.ok()) return;
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(reserved_.port());
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listening_ = bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && listen(fd_, 1) == 0;
  }
  ~BusyPort() { release(); }
  void release() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool ok() const { return listening_; }
  uint16_t port() const { return reserved_.port(); }

 private:
  ReservedPort reserved_;
  int fd_ = -1;
  bool listening_ = false;
};

// A busy port p and a reserved (free for the registry) port p + 1, so that
// with broker_ports.base = p node 0 fails to bind and node 1 binds. Bounded
// search: p + 1 may belong to someone else on a shared machine.
struct BusyThenFree {
  std::unique_ptr<BusyPort> busy;
  std::unique_ptr<ReservedPort> next;
  bool find() {
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto b = std::make_unique<BusyPort>();
      if (!b->ok() || b->port() == 65535) continue;
      auto n = std::make_unique<ReservedPort>(static_cast<uint16_t>(b->port() + 1));
      if (!n->ok()) continue;
      busy = std::move(b);
      next = std::move(n);
      return true;
    }
    return false;
  }
};

TEST(ListenerRegistry, PinnedNodesStayWhenAbsent) {
  Recorder rec;
  ListenerLimits l = loopback_limits();
  l.absent_grace_ms = 10;
  ReservedPort reserved;  // held until the registry has bound it
  ASSERT_TRUE(reserved.ok());
  const uint16_t free_port = reserved.port();
  l.explicit_ports = {{1001, free_port}};
  ListenerRegistry reg(l, rec.events());
  std::string error;
  ASSERT_TRUE(reg.bind_pinned(error)) << error;
  reg.observe_brokers({1}, 1000);
  reg.tick(5000);
  EXPECT_EQ(reg.port_of(1001), free_port);
}

TEST(ListenerRegistry, FailedBindIsRetriedWithBackoffAndReadinessRecovers) {
  BusyPort busy;
  ASSERT_TRUE(busy.ok());
  Recorder rec;
  ListenerLimits l = loopback_limits();
  l.port_base = busy.port();  // node 0's port is taken
  l.bind_retry_initial_ms = 100;
  l.bind_retry_max_ms = 400;
  ListenerRegistry reg(l, rec.events());
  reg.observe_brokers({0}, 1000);
  EXPECT_FALSE(reg.port_of(0));
  EXPECT_NE(reg.unready_reason().find("broker node 0"), std::string::npos) << reg.unready_reason();
  EXPECT_EQ(rec.bind_failures, 1);
  EXPECT_EQ(reg.next_due_ms(), 1100u);
  reg.tick(1050);  // not due yet
  EXPECT_EQ(rec.bind_failures, 1);
  reg.tick(1100);  // retry 1 (then 200 ms)
  reg.tick(1300);  // retry 2 (then 400 ms)
  reg.tick(1700);  // retry 3 (capped at 400 ms)
  reg.tick(2000);  // not due
  EXPECT_EQ(rec.bind_failures, 4);
  EXPECT_EQ(reg.next_due_ms(), 2100u);
  busy.release();
  reg.tick(2100);
  ASSERT_TRUE(reg.port_of(0));
  EXPECT_FALSE(reg.next_due_ms());
  EXPECT_EQ(*reg.port_of(0), l.port_base);
  EXPECT_EQ(reg.unready_reason(), "");
}

TEST(ListenerRegistry, ReadinessForgetsAFailedNodeTheClusterNoLongerNames) {
  BusyThenFree ports;
  ASSERT_TRUE(ports.find()) << "no busy port followed by a free one";
  Recorder rec;
  ListenerLimits l = loopback_limits();
  l.port_base = ports.busy->port();  // node 0 cannot bind, node 1 (base + 1) can
  ListenerRegistry reg(l, rec.events());
  reg.observe_brokers({0, 1}, 1000);
  EXPECT_NE(reg.unready_reason().find("broker node 0"), std::string::npos) << reg.unready_reason();
  ASSERT_TRUE(reg.port_of(1));
  EXPECT_EQ(*reg.port_of(1), ports.next->port());
  EXPECT_TRUE(can_connect(*reg.port_of(1)));
  reg.observe_brokers({1}, 2000);  // node 0 left the cluster
  EXPECT_EQ(reg.unready_reason(), "");
  int failures = rec.bind_failures;
  EXPECT_EQ(reg.next_due_ms(), 2000 + l.absent_grace_ms) << "no retry for a node nobody names";
  reg.tick(60000);
  EXPECT_EQ(rec.bind_failures, failures) << "kept retrying a node nobody names";
}

}  // namespace
}  // namespace epochgate::proxy
