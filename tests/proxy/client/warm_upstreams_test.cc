// tests/proxy/client/warm_upstreams_test.cc: the worker's pool of upstream
// connections dialled ahead of need (proxy/client/warm_upstreams.h). A
// session handed a kept connection must exchange exactly the bytes it would
// over its own dial (order, correlation ids), only without waiting for the
// dial; the pool stays within its bound and never dials a down broker in a
// storm. Dials are in-memory (tests/proxy/lib/fake_dialer.h).
#include "proxy/client/warm_upstreams.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "proxy/session/session.h"
#include "tests/proxy/fake_transport.h"
#include "tests/proxy/lib/fake_dialer.h"
#include "tests/proxy/session_rig.h"

namespace epochgate::proxy::testing {
namespace {

/// Node n's broker is "broker-n:9092" unless the test moved it.
class NodeDirectory final : public UpstreamDirectory {
 public:
  std::optional<config::HostPort> upstream_of(int32_t node) const override {
    auto it = moved.find(node);
    if (it != moved.end()) return it->second;
    return config::HostPort{"broker-" + std::to_string(node), 9092};
  }
  std::vector<config::HostPort> bootstrap() const override { return {{"broker-1", 9092}}; }
  void request_refresh(const char*) override {}
  bool clients_log_in_upstream() const override { return clients_log_in; }
  std::map<int32_t, config::HostPort> moved;
  bool clients_log_in = false;
};

/// A worker's pool and its sessions on one loop, every stream in memory.
class WarmRig {
 public:
  explicit WarmRig(uint32_t per_broker = 1, uint32_t max_idle_ms = 60000) {
    config::Config cfg;
    cfg.limits.warm_upstreams_per_broker = per_broker;
    cfg.limits.warm_upstream_max_idle_ms = max_idle_ms;
    uv_loop_init(&loop_);
    ctx_.loop = &loop_;
    ctx_.config = std::make_shared<const config::Config>(cfg);
    ctx_.upstreams = &directory;
    ctx_.make_dialer = [this](DialerOwner& owner) {
      auto d = std::make_unique<FakeDialer>(owner);
      last_made_ = d.get();
      made_.push_back(d.get());
      return d;
    };
    warm = std::make_unique<WarmUpstreams>(ctx_);
    ctx_.warm = warm.get();
  }
  ~WarmRig() {
    list_.for_each([](Session& s) { s.close(CloseReason::kShutdown); });
    warm->close();
    for (int i = 0; i < 100 && (list_.size() > 0 || !transports_.empty()); ++i) pump();
    EXPECT_EQ(list_.size(), 0u) << "a session did not free itself after close";
    uv_run(&loop_, UV_RUN_DEFAULT);
    warm.reset();
    uv_loop_close(&loop_);
  }

  /// The pool's dialer for `node` (made at its first dial).
  FakeDialer* pool_dialer(int32_t node) { return pool_dialers_[node]; }
  /// Starts warming `nodes`; a node's first dial makes its dialer (in
  /// the order of `nodes`).
  void set_nodes(const std::vector<int32_t>& nodes) {
    made_.clear();
    warm->set_nodes(nodes);
    size_t next = 0;
    for (int32_t n : nodes)
      if (!pool_dialers_.count(n) && next < made_.size()) pool_dialers_[n] = made_[next++];
  }
  /// `node`'s pending pool dial succeeds: returns the broker's side.
  FakeTransport* answer(int32_t node) {
    FakeTransport* t = pool_dialer(node)->connect(ctx_.pool);
    transports_.push_back(t);
    pump();
    return t;
  }
  /// A client connects to `node`'s listener: its session starts.
  FakeTransport* client_connects(int32_t node) {
    auto t = std::make_unique<FakeTransport>();
    FakeTransport* raw = t.get();
    transports_.push_back(raw);
    last_made_ = nullptr;
    auto* s = new Session(ctx_, list_, node, std::move(t));
    session_dialers_.push_back(last_made_);
    s->start();
    pump();
    return raw;
  }
  /// The latest session's own dialer.
  FakeDialer* session_dialer() { return session_dialers_.back(); }
  /// The latest session's own dial succeeds: returns the broker's side.
  FakeTransport* session_dial_answered() {
    FakeTransport* t = session_dialer()->connect(ctx_.pool);
    transports_.push_back(t);
    pump();
    return t;
  }
  /// Runs callbacks as the loop would, a bounded number of rounds.
  void pump(int rounds = 4) {
    for (int r = 0; r < rounds; ++r) {
      for (size_t i = 0; i < transports_.size();) {
        if (transports_[i]->pump()) {
          ++i;
        } else {
          transports_.erase(transports_.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      for (auto& d : session_dialers_)
        if (d != nullptr && d->pump()) d = nullptr;
      for (auto& [n, d] : pool_dialers_) d->pump();
      uv_run(&loop_, UV_RUN_NOWAIT);
    }
  }

  NodeDirectory directory;
  std::unique_ptr<WarmUpstreams> warm;

 private:
  uv_loop_t loop_;
  WorkerContext ctx_;
  SessionList list_;
  FakeDialer* last_made_ = nullptr;
  std::vector<FakeDialer*> made_;  // since the last set_nodes()
  std::map<int32_t, FakeDialer*> pool_dialers_;
  std::vector<FakeDialer*> session_dialers_;
  std::vector<FakeTransport*> transports_;
};

/// Three pipelined requests and their answers through one session; returns
/// what the broker read and what the client read.
std::pair<std::string, std::string> exchange(WarmRig& rig, FakeTransport* client,
                                             FakeTransport* broker) {
  std::string requests;
  for (int32_t corr : {7, 8, 9}) requests += request_frame(kHeartbeat, 3, corr, std::string(4, 'r'));
  client->peer_sends(requests);
  rig.pump();
  std::string answers;
  for (int32_t corr : {7, 8, 9}) answers += response_frame(corr, std::string(6, '\0'));
  broker->peer_sends(answers);
  rig.pump();
  return {broker->sent(), client->sent()};
}

TEST(WarmUpstreams, KeepsTheConfiguredNumberPerBrokerOneDialAtATime) {
  WarmRig rig(2);
  rig.set_nodes({1, 2});
  EXPECT_EQ(rig.warm->dialing_count(), 2u) << "one dial per broker at a time";
  rig.answer(1);
  rig.answer(2);
  EXPECT_EQ(rig.warm->ready_count(), 2u);
  EXPECT_EQ(rig.warm->dialing_count(), 2u) << "the second of each broker's two";
  rig.answer(1);
  rig.answer(2);
  EXPECT_EQ(rig.warm->ready_count(), 4u);
  EXPECT_EQ(rig.warm->dialing_count(), 0u) << "full: nothing more is dialled";
  EXPECT_EQ(rig.pool_dialer(1)->dials(), 2);
  EXPECT_TRUE(rig.pool_dialer(1)->probe()) << "kept connections are answered (ApiVersions) ones";
}

TEST(WarmUpstreams, SessionOnKeptConnectionExchangesTheSameBytesWithoutDialling) {
  std::pair<std::string, std::string> warm_seen, dialled_seen;
  {
    WarmRig rig;
    rig.set_nodes({1});
    rig.answer(1);
    ASSERT_EQ(rig.warm->ready_count(), 1u);
    rig.client_connects(1);
    EXPECT_EQ(rig.session_dialer()->dials(), 0) << "the session took the kept connection";
    EXPECT_EQ(rig.warm->ready_count(), 0u);
    EXPECT_EQ(rig.warm->dialing_count(), 1u) << "the pool refills in the background";
    EXPECT_EQ(rig.pool_dialer(1)->dials(), 2);
  }
  // Same exchange, kept connection vs. the session's own dial.
  {
    WarmRig rig;
    rig.set_nodes({1});
    FakeTransport* broker = rig.answer(1);
    FakeTransport* client = rig.client_connects(1);
    warm_seen = exchange(rig, client, broker);
  }
  {
    WarmRig rig(0);
    rig.set_nodes({1});
    EXPECT_EQ(rig.warm->dialing_count(), 0u) << "0 keeps none";
    FakeTransport* client = rig.client_connects(1);
    ASSERT_EQ(rig.session_dialer()->dials(), 1);
    FakeTransport* broker = rig.session_dial_answered();
    dialled_seen = exchange(rig, client, broker);
  }
  std::string requests, answers;
  for (int32_t corr : {7, 8, 9}) requests += request_frame(kHeartbeat, 3, corr, std::string(4, 'r'));
  for (int32_t corr : {7, 8, 9}) answers += response_frame(corr, std::string(6, '\0'));
  EXPECT_EQ(warm_seen.first, requests) << "the broker reads the client's requests, in order, untouched";
  EXPECT_EQ(warm_seen.second, answers) << "the client reads its answers, in order, untouched";
  EXPECT_EQ(warm_seen, dialled_seen);
}

TEST(WarmUpstreams, DownBrokerIsNotDialledInAStorm) {
  WarmRig rig;
  rig.set_nodes({1});
  rig.pool_dialer(1)->fail();
  EXPECT_EQ(rig.warm->dialing_count(), 0u);
  // Clients keep connecting and the worker's sweep keeps ticking: the pool
  // waits out its back-off rather than dialling for each.
  for (int i = 0; i < 50; ++i) {
    rig.client_connects(1);
    rig.session_dialer()->fail();
    rig.warm->tick();
    rig.set_nodes({1});
  }
  rig.pump();
  EXPECT_EQ(rig.pool_dialer(1)->dials(), 1) << "one failed dial, then the back-off";
  EXPECT_EQ(rig.warm->ready_count(), 0u);
}

TEST(WarmUpstreams, KeepsNothingWhenClientsLogInUpstreamThemselves) {
  WarmRig rig;
  rig.directory.clients_log_in = true;
  rig.set_nodes({1});
  EXPECT_EQ(rig.warm->dialing_count(), 0u);
  EXPECT_TRUE(rig.warm->take(1, {"broker-1", 9092}) == nullptr);
}

TEST(WarmUpstreams, ConnectionTheBrokerClosedIsNotHandedOut) {
  WarmRig rig;
  rig.set_nodes({1});
  FakeTransport* broker = rig.answer(1);
  ASSERT_EQ(rig.warm->ready_count(), 1u);
  broker->peer_closes();
  rig.pump();
  EXPECT_EQ(rig.warm->ready_count(), 0u);
  rig.warm->tick();
  EXPECT_EQ(rig.pool_dialer(1)->dials(), 1)
      << "a broker that closes kept connections is not redialled at once (back-off)";
}

TEST(WarmUpstreams, KeptConnectionForAnOlderAddressIsDropped) {
  WarmRig rig;
  rig.set_nodes({1});
  rig.answer(1);
  rig.directory.moved[1] = config::HostPort{"broker-1b", 9092};
  EXPECT_TRUE(rig.warm->take(1, {"broker-1b", 9092}) == nullptr);
  EXPECT_EQ(rig.warm->ready_count(), 0u);
  EXPECT_EQ(rig.pool_dialer(1)->targets().front().host, "broker-1b") << "refilled for the new address";
}

TEST(WarmUpstreams, IdleOnesAreClosedAndDialledAnew) {
  WarmRig rig(1, /*max_idle_ms=*/0);
  rig.set_nodes({1});
  rig.answer(1);
  ASSERT_EQ(rig.warm->ready_count(), 1u);
  rig.warm->tick();
  EXPECT_EQ(rig.warm->ready_count(), 0u);
  EXPECT_EQ(rig.pool_dialer(1)->dials(), 2) << "the expired one is replaced by a fresh dial";
}

TEST(WarmUpstreams, NodesNoLongerListedKeepNothing) {
  WarmRig rig;
  rig.set_nodes({1, 2});
  rig.answer(1);
  rig.answer(2);
  rig.warm->set_nodes({2});
  rig.pump();
  EXPECT_EQ(rig.warm->ready_count(), 1u);
}

TEST(WarmUpstreams, ManyBrokersOpenABoundedNumberOfDialsAndNodes) {
  WarmRig rig;
  std::vector<int32_t> many;
  for (int32_t n = 0; n < 10000; ++n) many.push_back(n);
  rig.warm->set_nodes(many);
  EXPECT_EQ(rig.warm->dialing_count(), WarmUpstreams::kMaxDials);
  for (int i = 0; i < 100; ++i) rig.warm->tick();
  EXPECT_EQ(rig.warm->dialing_count(), WarmUpstreams::kMaxDials) << "no burst of sockets";
  EXPECT_TRUE(rig.warm->take(9999, {"broker-9999", 9092}) == nullptr) << "past kMaxNodes: not warmed";
}

TEST(WarmUpstreams, DescriptorBoundCoversKeptConnectionsAndDials) {
  EXPECT_EQ(WarmUpstreams::max_descriptors(0), 0u) << "the pool off holds nothing";
  EXPECT_EQ(WarmUpstreams::max_descriptors(2),
            2 * WarmUpstreams::kMaxNodes + WarmUpstreams::kMaxDials);
}

}  // namespace
}  // namespace epochgate::proxy::testing
