// tests/proxy/client/kafka_client_rig.h: one KafkaClient on a real libuv loop
// (its kick and deadline timers) whose dials end when the test says
// (tests/proxy/lib/fake_dialer.h) and whose broker the test plays on an
// in-memory transport: it reads the request frames the client wrote and
// sends answers back. Records every callback and observer call. Test
// tooling only; every loop here is bounded and nothing sleeps.
#pragma once

#include <uv.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codec/api_version_ranges.h"
#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/produce_request.h"
#include "codec/messages/produce_response.h"
#include "proxy/client/kafka_client.h"
#include "tests/proxy/fake_transport.h"
#include "tests/proxy/lib/fake_dialer.h"

namespace epochgate::proxy::testing {

/// One request frame the broker read: its header and the whole frame.
struct SeenRequest {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::string client_id;
};

/// What one send()'s callback got.
struct Outcome {
  ClientError error = ClientError::kNone;
  std::string detail;
  int16_t version = -1;
  int32_t correlation_id = 0;
  int32_t throttle_time_ms = -1;  ///< from the typed response, when ok
};

class KafkaClientRig : public KafkaClientObserver {
 public:
  /// `o.targets` defaults to one broker.
  explicit KafkaClientRig(KafkaClientOptions o = {}) {
    uv_loop_init(&loop_);
    if (o.targets.empty()) o.targets = {{"broker-1", 9092}};
    client = std::make_unique<KafkaClient>(
        &loop_,
        [this](DialerOwner& owner) {
          auto d = std::make_unique<FakeDialer>(owner);
          dialer = d.get();
          return d;
        },
        std::move(o), this);
  }
  ~KafkaClientRig() {
    if (!close_called_) close();
    for (int i = 0; i < 20 && !closed; ++i) run();
    EXPECT_TRUE(closed) << "the client did not finish closing";
    client.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0) << "a handle was left open";
  }

  /// Brokers here offer Produce v3-v9.
  static ApiVersionRanges produce_versions(int16_t lo = 3, int16_t hi = 9) {
    ApiVersionRanges v;
    v.set(0, lo, hi);
    return v;
  }

  /// A Produce (acks 1, no topics) whose answer is recorded in `outcomes`.
  ClientError send(SendOptions o = {}) {
    codec::ProduceRequest req;
    req.acks = 1;
    req.timeout_ms = 1000;
    return client->send(std::move(req), o, [this](ClientResult<codec::ProduceResponse>&& r) {
      Outcome out{r.error, r.detail, r.version, r.correlation_id, -1};
      if (r.ok()) out.throttle_time_ms = r.response.throttle_time_ms;
      outcomes.push_back(std::move(out));
    });
  }
  /// A Produce with acks=0; `written` results go to `posts_written`.
  ClientError post() {
    codec::ProduceRequest req;
    req.acks = 0;
    return client->post(std::move(req), SendOptions{}, nullptr,
                        [this](ClientError e) { posts_written.push_back(e); });
  }

  /// Closes the client; `closed` once nothing of it is left on the loop.
  void close() {
    close_called_ = true;
    client->close([this] { closed = true; });
  }
  bool closed = false;

  /// Runs what the loop and the in-memory peers have due, a few rounds.
  void run(int rounds = 3) {
    for (int i = 0; i < rounds; ++i) {
      uv_run(&loop_, UV_RUN_NOWAIT);
      if (broker && !broker->pump()) broker = nullptr;
      if (dialer && dialer->pump()) dialer = nullptr;
    }
  }
  /// Steps the loop (blocking until its next timer) until `outcomes` holds
  /// `n` answers; bounded by rounds, not by a clock.
  void run_until_outcomes(size_t n) {
    for (int i = 0; i < 1000 && outcomes.size() < n; ++i) {
      uv_run(&loop_, UV_RUN_ONCE);
      run(1);
    }
  }
  /// The pending dial succeeds with `versions`; the broker side exists from now on.
  void connect(const ApiVersionRanges& versions = produce_versions()) {
    run();
    ASSERT_NE(dialer, nullptr);
    ASSERT_TRUE(dialer->dialing());
    broker = dialer->connect(pool_, versions);
    run();
  }
  /// Request frames the broker read since the last call.
  std::vector<SeenRequest> requests() {
    std::vector<SeenRequest> out;
    if (!broker) return out;
    std::string bytes = broker->take_sent();
    size_t at = 0;
    while (at + 4 <= bytes.size()) {
      auto* p = reinterpret_cast<const uint8_t*>(bytes.data() + at);
      size_t n = (size_t{p[0]} << 24) | (size_t{p[1]} << 16) | (size_t{p[2]} << 8) | p[3];
      codec::RequestHeader h;
      EXPECT_TRUE(codec::parse_request_header(p + 4, n, h).ok());
      out.push_back({h.api_key, h.api_version, h.correlation_id,
                     h.client_id ? std::string(*h.client_id) : std::string()});
      at += 4 + n;
    }
    EXPECT_EQ(at, bytes.size()) << "whole frames only";
    return out;
  }
  /// The broker answers correlation id `corr` with a ProduceResponse at `version`.
  void answer(int32_t corr, int16_t version, int32_t throttle_time_ms = 0) {
    codec::ProduceResponse m;
    m.throttle_time_ms = throttle_time_ms;
    codec::ResponseHeader h;
    h.correlation_id = corr;
    std::vector<uint8_t> frame;
    codec::encode_frame(frame, h, m, version);
    ASSERT_NE(broker, nullptr);
    broker->peer_sends(frame.data(), frame.size());
    run();
  }

  // KafkaClientObserver
  void on_dial_attempt_failed(const DialFailure&) override { ++attempts_failed; }
  void on_connected(size_t, const ApiVersionRanges&) override { ++connected; }
  void on_connection_lost(ClientError e, const std::string&) override { lost.push_back(e); }
  void on_post_answered() override { ++posts_answered; }

  std::unique_ptr<KafkaClient> client;
  FakeDialer* dialer = nullptr;      ///< until the client's close finished
  FakeTransport* broker = nullptr;   ///< the broker's side, once connected
  std::vector<Outcome> outcomes;
  std::vector<ClientError> posts_written;
  std::vector<ClientError> lost;
  int attempts_failed = 0;
  int connected = 0;
  int posts_answered = 0;

 private:
  uv_loop_t loop_;
  BufferPool pool_{64 * 1024, 8};
  bool close_called_ = false;
};

}  // namespace epochgate::proxy::testing
