// tests/proxy/session_rig.h: one Session on a real libuv loop (its timers)
// with both of its byte streams in memory (tests/proxy/fake_transport.h):
// the test plays the client on one side and the broker on the other, and
// asserts what each of them sees on the wire. The upstream connection comes
// from an in-memory Dialer handed to the session through WorkerContext.
// Test tooling only; every loop here is bounded.
#pragma once

#include <uv.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "proxy/core/dialer.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/buffer_budget.h"
#include "proxy/session/session.h"
#include "tests/proxy/fake_transport.h"
#include "tests/proxy/lib/fake_dialer.h"

namespace epochgate::proxy::testing {

/// Every node's broker is "broker:9092" (once known: address_known);
/// nothing to refresh.
class FixedDirectory final : public UpstreamDirectory {
 public:
  std::optional<config::HostPort> upstream_of(int32_t) const override {
    if (!address_known) return std::nullopt;
    return config::HostPort{"broker", 9092};
  }
  std::vector<config::HostPort> bootstrap() const override {
    if (!address_known) return {};
    return {{"broker", 9092}};
  }
  void request_refresh(const char*) override { ++refreshes; }
  bool clients_log_in_upstream() const override { return clients_log_in; }
  int refreshes = 0;
  bool clients_log_in = false;  ///< clients log in to the brokers with SASL themselves
  bool address_known = true;    ///< false: no address until a refresh (the test) sets it
};

/// A request frame (size prefix included), request header v1 with a null client id.
inline std::string request_frame(int16_t key, int16_t version, int32_t corr,
                                 const std::string& body = {}) {
  std::string f(4, '\0');
  auto be16 = [&](int16_t v) {
    f.push_back(static_cast<char>(static_cast<uint16_t>(v) >> 8));
    f.push_back(static_cast<char>(v & 0xff));
  };
  auto be32 = [&](int32_t v) {
    for (int s = 24; s >= 0; s -= 8) f.push_back(static_cast<char>((static_cast<uint32_t>(v) >> s) & 0xff));
  };
  be16(key);
  be16(version);
  be32(corr);
  be16(-1);  // client id: null
  f += body;
  uint32_t n = static_cast<uint32_t>(f.size() - 4);
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return f;
}

/// A response frame (size prefix included), response header v0.
inline std::string response_frame(int32_t corr, const std::string& body) {
  std::string f(4, '\0');
  for (int s = 24; s >= 0; s -= 8) f.push_back(static_cast<char>((static_cast<uint32_t>(corr) >> s) & 0xff));
  f += body;
  uint32_t n = static_cast<uint32_t>(f.size() - 4);
  for (int i = 0; i < 4; ++i) f[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return f;
}

/// Heartbeat v3 (key 12): opaque to epochgate without a policy, both ways.
constexpr int16_t kHeartbeat = 12;

/// Produce v7 with `acks` and no topics (transactional id null, timeout 1000 ms).
inline std::string produce_v7(int32_t corr, int16_t acks) {
  std::string body;
  body += std::string("\xff\xff", 2);  // transactional_id: null
  body.push_back(static_cast<char>(static_cast<uint16_t>(acks) >> 8));
  body.push_back(static_cast<char>(acks & 0xff));
  body += std::string("\x00\x00\x03\xe8", 4);  // timeout_ms 1000
  body += std::string("\x00\x00\x00\x00", 4);  // topics: []
  return request_frame(0, 7, corr, body);
}

/// Makes `budget` (a limit under 2 MiB) held past its limit by 99 other
/// connections holding 2 MiB: a new session's share is 1/100 of the limit,
/// so it pauses at once. Undo with budget.add(-(2 << 20)).
inline void others_hold_more_than(BufferBudget& budget) {
  for (int i = 0; i < 99; ++i) budget.join();
  budget.add(2u << 20);
}

/// The session under test, its client and its broker.
class SessionRig {
 public:
  /// `budget`: the process-wide buffer budget the session reports to (null: none).
  /// `clients_log_in`: the directory says clients log in with SASL themselves.
  /// `address_known`: false, the session starts without a broker address.
  explicit SessionRig(config::Config cfg = {}, FencingHooks* fencing = nullptr,
                      BufferBudget* budget = nullptr, bool clients_log_in = false,
                      bool address_known = true) {
    directory_.clients_log_in = clients_log_in;
    directory_.address_known = address_known;
    uv_loop_init(&loop_);
    ctx_.loop = &loop_;
    ctx_.budget = budget;
    ctx_.budget_recheck = [this] { ++budget_rechecks; };
    ctx_.config = std::make_shared<const config::Config>(std::move(cfg));
    ctx_.upstreams = &directory_;
    ctx_.fencing = fencing;
    ctx_.make_dialer = [this](DialerOwner& owner) {
      auto d = std::make_unique<FakeDialer>(owner);
      dialer_ = d.get();
      return d;
    };
    auto t = std::make_unique<FakeTransport>();
    client = t.get();
    client->sent_log = &client_sent_;
    session_ = new Session(ctx_, list_, -1, std::move(t));
    session_->start();
  }
  ~SessionRig() {
    if (alive()) session_->close(CloseReason::kShutdown);
    for (int i = 0; i < 100 && alive(); ++i) pump();
    EXPECT_FALSE(alive()) << "the session did not free itself after close";
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }

  /// The dial succeeds; the broker side exists from now on.
  void connect() {
    ASSERT_NE(dialer_, nullptr);
    ASSERT_TRUE(dialer_->dialing());
    broker = dialer_->connect(ctx_.pool);
    pump();
  }
  /// Runs callbacks as the loop would, a bounded number of rounds.
  void pump(int rounds = 3) {
    for (int i = 0; i < rounds && alive(); ++i) {
      if (!client_closed_ && !client->pump()) client_closed_ = true;
      if (!alive()) return;
      if (broker && !broker->pump()) broker = nullptr;
      if (!alive()) return;
      if (dialer_ && dialer_->pump()) dialer_ = nullptr;
      if (!alive()) return;
      uv_run(&loop_, UV_RUN_NOWAIT);
    }
  }
  /// Pumps until `done()` or `ms` passed (the loop's timers run meanwhile).
  template <typename F>
  bool pump_until(F done, int ms = 2000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!done() && alive() && std::chrono::steady_clock::now() < deadline) {
      pump(1);
      uv_run(&loop_, UV_RUN_NOWAIT);
    }
    return done();
  }
  bool alive() const { return list_.size() > 0; }
  /// The session's dial asks for epochgate's ApiVersions probe (dialing()).
  bool dial_probes() const { return dialer_ != nullptr && dialer_->probe(); }
  /// The client side closed (the session closed its connection).
  bool client_closed() const { return client_closed_ || !alive(); }
  WorkerContext& ctx() { return ctx_; }
  /// Where the session looks up its broker's address.
  FixedDirectory& directory() { return directory_; }
  /// The session's dialer, until it reported closed (null then).
  FakeDialer* dialer() { return dialer_; }
  /// The session under test (alive()).
  Session& session() { return *session_; }
  /// Times the session asked the worker to re-check the budget.
  int budget_rechecks = 0;
  /// Everything the session wrote to the client, readable after it closed.
  const std::string& client_sent() const { return client_sent_; }

  FakeTransport* client = nullptr;  ///< the client's side of its connection
  FakeTransport* broker = nullptr;  ///< the broker's side, once connected

 private:
  uv_loop_t loop_;
  WorkerContext ctx_;
  FixedDirectory directory_;
  SessionList list_;
  Session* session_ = nullptr;
  FakeDialer* dialer_ = nullptr;
  bool client_closed_ = false;
  std::string client_sent_;
};

}  // namespace epochgate::proxy::testing
