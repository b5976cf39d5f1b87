// tests/proxy/lib/fake_dialer.h: an in-memory Dialer (proxy/core/dialer.h)
// for unit tests of what dials upstream connections (Session, KafkaClient).
// The test decides when and how a dial ends: connect() hands the owner a
// Connection over a FakeTransport (tests/proxy/fake_transport.h) whose far
// end the test plays as the broker; fail() reports every target failed.
// Like a real dialer, it calls its owner only from the test's own calls,
// never from inside a Dialer call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codec/api_version_ranges.h"
#include "config/config.h"
#include "proxy/core/dialer.h"
#include "proxy/net/buffer_pool.h"
#include "proxy/net/connection.h"
#include "tests/proxy/fake_transport.h"

namespace epochgate::proxy::testing {

/// Hands its owner an in-memory upstream connection when the test says so.
class FakeDialer final : public Dialer {
 public:
  explicit FakeDialer(DialerOwner& owner) : owner_(owner) {}
  void dial(std::vector<config::HostPort> targets, uint32_t, std::string) override {
    targets_ = std::move(targets);
    dialing_ = true;
    ++dials_;
  }
  // Kept, never applied: the fake builds no TcpTransport for it to wrap.
  void set_transport_wrapper(TransportWrapper wrap) override { wrap_ = std::move(wrap); }
  void set_probe(bool probe) override { probe_ = probe; }
  void cancel() override { dialing_ = false; }
  void close() override { closing_ = true; }

  bool dialing() const { return dialing_; }
  /// Dials started so far.
  int dials() const { return dials_; }
  /// The targets of the latest dial.
  const std::vector<config::HostPort>& targets() const { return targets_; }
  /// What the owner asked for its last dial: epochgate's ApiVersions probe or not.
  bool probe() const { return probe_; }
  /// The dial succeeds at target `index`, whose broker answered the probe
  /// with `versions`: returns the broker side's transport.
  FakeTransport* connect(BufferPool& pool, const ApiVersionRanges& versions = {},
                         size_t index = 0) {
    auto t = std::make_unique<FakeTransport>();
    FakeTransport* raw = t.get();
    auto conn = std::make_unique<Connection>(std::move(t), pool, parked_);
    dialing_ = false;
    owner_.on_dialed(std::move(conn), index, versions);
    return raw;
  }
  /// Every target fails at `stage` with `status` (one report each), then the dial.
  void fail(DialStage stage = DialStage::kConnect, int status = -111 /* ECONNREFUSED */) {
    dialing_ = false;
    for (size_t i = 0; i < targets_.size(); ++i) {
      DialFailure f;
      f.index = i;
      f.target = targets_[i];
      f.stage = stage;
      f.status = status;
      owner_.on_dial_attempt_failed(f);
    }
    owner_.on_dial_failed();
  }
  /// Finishes a close(): true when the owner was told (the dialer may be gone).
  bool pump() {
    if (!closing_ || told_closed_) return false;
    told_closed_ = true;
    owner_.on_dialer_closed();
    return true;
  }

 private:
  /// Owns the connection for the moment before the owner takes it.
  struct Parked : ConnectionOwner {
    void on_readable(Connection&) override {}
    void on_read_error(Connection&, int) override {}
    void on_drained(Connection&) override {}
    void on_write_error(Connection&, int) override {}
    void on_closed(Connection&) override {}
  };
  DialerOwner& owner_;
  Parked parked_;
  std::vector<config::HostPort> targets_;
  TransportWrapper wrap_;
  int dials_ = 0;
  bool dialing_ = false;
  bool closing_ = false;
  bool told_closed_ = false;
  bool probe_ = true;
};

}  // namespace epochgate::proxy::testing
