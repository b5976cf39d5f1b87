// tests/proxy/lib/fake_broker_client.h: an in-memory BrokerClient and
// BrokerClients (proxy/client/broker_client.h) for unit tests of the code
// that sends through them (the rerouter). The test plays the broker: every
// accepted request waits in the fake until the test answers it, fails it,
// disconnects or closes the client, so a delay is whatever the test does
// before that, and nothing ever depends on a clock. Refusals are scripted
// per client (refuse_with) or per node (FakeBrokerClients::refuse_node).
// Callbacks run only from the test's own calls, never inside send().
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/writer.h"
#include "config/config.h"
#include "proxy/client/broker_client.h"

namespace epochgate::proxy::testing {

/// One request the fake accepted.
struct FakeCall {
  BrokerRequest request;
  int16_t version = -1;    ///< what it went at: the caller's highest
  int32_t correlation_id = 0;
  std::vector<uint8_t> frame;  ///< the encoded request, size prefix included

  /// The request decoded back from `frame` (its header checked): what a
  /// broker would have read. False when it does not decode.
  template <class Req>
  bool decode(Req& out) const {
    codec::RequestHeader h;
    if (frame.size() < 4) return false;
    const uint8_t* payload = frame.data() + 4;
    const size_t size = frame.size() - 4;
    if (!codec::parse_request_header(payload, size, h).ok()) return false;
    return codec::decode_body(payload + h.size, size - h.size, version, out).ok();
  }
  bool expects_answer() const { return static_cast<bool>(request.done); }
};

/// One broker's client, scripted by the test.
class FakeBrokerClient final : public BrokerClient {
 public:
  explicit FakeBrokerClient(int32_t node_id = -1) : node_id(node_id) {}

  const int32_t node_id;
  /// Requests accepted at once (waiting for an answer); past it: kBusy.
  size_t max_outstanding = 64;

  // ---- scripting ----
  /// Every submit() is refused with `e` from now on (kNone: accepted again).
  void refuse_with(ClientError e) { refusal_ = e; }
  /// Requests accepted and not yet answered, oldest first.
  size_t pending() const { return calls_.size(); }
  const FakeCall& call(size_t i = 0) const { return calls_.at(i); }
  /// Requests accepted over the fake's life (answered or not).
  size_t accepted() const { return accepted_; }
  bool closed() const { return closed_; }

  /// The broker answers request `i` with `resp`, encoded at the version
  /// the request went at; `done` decodes it as the real client would.
  template <class Resp>
  void answer(const Resp& resp, size_t i = 0) {
    std::vector<uint8_t> body;
    codec::Writer w(body);
    resp.encode(w, calls_.at(i).version);
    answer_bytes(body, i);
  }
  /// The broker answers request `i` with these body bytes (a bad answer).
  /// Like a real client's read buffer, the bytes the answer is read from
  /// are overwritten once its callback returned: a view kept past it reads
  /// garbage (and, under AddressSanitizer, freed memory).
  void answer_bytes(const std::vector<uint8_t>& body, size_t i = 0) {
    FakeCall c = take(i);
    std::vector<uint8_t> input(body);
    BrokerAnswer a;
    a.version = c.version;
    a.correlation_id = c.correlation_id;
    a.body = input.data();
    a.size = input.size();
    deliver(c, std::move(a));
    std::fill(input.begin(), input.end(), uint8_t{0xee});
  }
  /// Request `i` fails with `e` (kTimeout, kBadResponse, ...).
  void fail(ClientError e, std::string detail = "scripted failure", size_t i = 0) {
    FakeCall c = take(i);
    BrokerAnswer a;
    a.error = e;
    a.detail = std::move(detail);
    a.version = c.version;
    a.correlation_id = c.correlation_id;
    deliver(c, std::move(a));
  }
  /// A post (no answer expected) is written: its `written` runs with `e`.
  void post_written(ClientError e = ClientError::kNone, size_t i = 0) {
    FakeCall c = take(i);
    if (c.request.written) c.request.written(e);
  }

  // ---- BrokerClient ----
  ClientError submit(BrokerRequest req) override {
    if (closed_) return ClientError::kClosed;
    if (refusal_ != ClientError::kNone) return refusal_;
    if (calls_.size() >= max_outstanding) return ClientError::kBusy;
    if (req.hi < req.lo) return ClientError::kUnsupportedVersion;
    FakeCall c;
    c.version = req.hi;
    c.correlation_id = ++correlation_;
    codec::RequestHeader h;
    h.api_key = req.api_key;
    h.api_version = c.version;
    h.correlation_id = c.correlation_id;
    h.client_id = std::string_view(req.client_id);
    req.encode(c.frame, h, c.version);
    c.request = std::move(req);
    calls_.push_back(std::move(c));
    ++accepted_;
    return ClientError::kNone;
  }
  /// Fails every pending request with kDisconnected, oldest first.
  void disconnect(const std::string& why) override { fail_all(ClientError::kDisconnected, why); }
  /// Fails every pending request with kClosed; `done` runs now.
  void close(std::function<void()> done) override {
    if (!closed_) {
      closed_ = true;
      fail_all(ClientError::kClosed, "client closed");
    }
    if (done) done();
  }

 private:
  FakeCall take(size_t i) {
    FakeCall c = std::move(calls_.at(i));
    calls_.erase(calls_.begin() + static_cast<std::ptrdiff_t>(i));
    return c;
  }
  static void deliver(FakeCall& c, BrokerAnswer&& a) {
    if (c.request.done) {
      auto done = std::move(c.request.done);
      done(std::move(a));
    } else if (c.request.written) {
      c.request.written(a.error);
    }
  }
  void fail_all(ClientError e, const std::string& why) {
    std::deque<FakeCall> all = std::move(calls_);
    calls_.clear();
    for (FakeCall& c : all) {
      BrokerAnswer a;
      a.error = e;
      a.detail = why;
      a.version = c.version;
      a.correlation_id = c.correlation_id;
      deliver(c, std::move(a));
    }
  }

  std::deque<FakeCall> calls_;
  ClientError refusal_ = ClientError::kNone;
  int32_t correlation_ = 0;
  size_t accepted_ = 0;
  bool closed_ = false;
};

/// One FakeBrokerClient per node id, created on first use.
class FakeBrokerClients final : public BrokerClients {
 public:
  /// client() answers nullptr for `node_id` (no connection possible).
  void refuse_node(int32_t node_id) { refused_.insert(node_id); }
  /// The node's client, or nullptr when it was never asked for.
  FakeBrokerClient* node(int32_t node_id) {
    auto it = clients_.find(node_id);
    return it == clients_.end() ? nullptr : it->second.get();
  }
  /// Addresses client() was asked for, per node (the latest).
  std::map<int32_t, config::HostPort> addresses;
  bool closed() const { return closed_; }

  FakeBrokerClient* client(int32_t node_id, const config::HostPort& address) override {
    if (closed_ || refused_.count(node_id)) return nullptr;
    addresses[node_id] = address;
    auto& c = clients_[node_id];
    if (!c) c = std::make_unique<FakeBrokerClient>(node_id);
    return c.get();
  }
  void forget(int32_t node_id) override {
    auto it = clients_.find(node_id);
    if (it == clients_.end()) return;
    it->second->close(nullptr);
    forgotten_.push_back(std::move(it->second));
    clients_.erase(it);
  }
  void close(std::function<void()> done) override {
    closed_ = true;
    for (auto& [id, c] : clients_) c->close(nullptr);
    if (done) done();
  }

 private:
  std::map<int32_t, std::unique_ptr<FakeBrokerClient>> clients_;
  std::vector<std::unique_ptr<FakeBrokerClient>> forgotten_;
  std::set<int32_t> refused_;
  bool closed_ = false;
};

}  // namespace epochgate::proxy::testing
