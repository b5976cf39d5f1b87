// TlsTransport's states (proxy/tls/tls_transport.h): idle until reading
// starts, handshaking until the handshake ends as ready or failed, plain
// for a plaintext peer where that is allowed, closing after close(); the
// user hears on_transport_ready exactly once on the way out of the
// handshake. The inner socket is the in-memory FakeTransport, the peer an
// OpenSSL engine of its own or raw bytes.
#include <gtest/gtest.h>
#include <uv.h>

#include <algorithm>
#include <memory>
#include <string>

#include "proxy/tls/tls_context.h"
#include "proxy/tls/tls_engine.h"
#include "proxy/tls/tls_transport.h"
#include "tests/proxy/fake_transport.h"
#include "tests/proxy/tls_test_support.h"

namespace epochgate::proxy::tls {
namespace {

using State = TlsTransport::State;

/// A Kafka frame: its first byte (0) is not a TLS record's (0x16).
const std::string kPlaintextFrame("\x00\x00\x00\x05hello", 9);

/// Records what the transport tells its user; reads into a buffer of its own.
struct User final : TransportUser {
  int ready_calls = 0;
  int ready_status = 0;
  bool closed = false;
  std::string got;
  char buf[4096];
  void on_transport_alloc(uv_buf_t* b) override { *b = uv_buf_init(buf, sizeof buf); }
  void on_transport_read(ssize_t n) override {
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  }
  void on_transport_written(int) override {}
  void on_transport_ready(int status) override {
    ++ready_calls;
    ready_status = status;
  }
  void on_transport_closed() override { closed = true; }
};

std::shared_ptr<const TlsContext> client_ctx() {
  config::UpstreamTlsConfig c;
  c.enabled = true;
  c.ca_file = test::cert("ca.crt");
  std::string error;
  auto ctx = TlsContext::build_client(c, error);
  EXPECT_TRUE(ctx) << error;
  return ctx;
}

std::shared_ptr<const TlsContext> server_ctx() {
  config::TlsConfig c;
  c.cert_file = test::cert("server.crt");
  c.key_file = test::cert("server.key");
  std::string error;
  auto ctx = TlsContext::build_server(c, error);
  EXPECT_TRUE(ctx) << error;
  return ctx;
}

/// One TlsTransport on its own loop over an in-memory socket.
class Rig {
 public:
  /// `server`: epochgate's side of a client's connection; else its side of
  /// a broker connection.
  explicit Rig(bool server) {
    uv_loop_init(&loop_);
    auto inner = std::make_unique<testing::FakeTransport>();
    sock = inner.get();
    sock->set_try_write_limit(1 << 20);
    t = std::make_unique<TlsTransport>(
        &loop_, std::move(inner),
        server ? TlsEngine::server(server_ctx()) : TlsEngine::client(client_ctx(), "localhost"),
        server ? TlsTransport::Side::kClient : TlsTransport::Side::kUpstream, 0, nullptr);
    t->set_user(user);
  }
  ~Rig() {
    if (t->state() != State::kClosing) t->close();
    if (sock) sock->pump();
    for (int i = 0; i < 10 && !user.closed; ++i) uv_run(&loop_, UV_RUN_NOWAIT);
    EXPECT_TRUE(user.closed);
    t.reset();
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  /// Runs the in-memory socket and the loop a few rounds.
  void run() {
    for (int i = 0; i < 3; ++i) {
      if (sock && !sock->pump()) sock = nullptr;
      uv_run(&loop_, UV_RUN_NOWAIT);
    }
  }
  /// Handshakes with an OpenSSL client until both sides are done (bounded).
  bool handshake_with_client() {
    auto client = TlsEngine::client(client_ctx(), "localhost");
    uint8_t b[16384];
    for (int i = 0; i < 50 && !(client->handshake_done() && t->ready()); ++i) {
      client->handshake();
      std::string out;
      while (size_t n = client->take_output(b, sizeof b)) out.append(reinterpret_cast<char*>(b), n);
      if (!out.empty()) sock->peer_sends(out);
      run();
      std::string back = sock->take_sent();
      if (!back.empty())
        client->receive(reinterpret_cast<const uint8_t*>(back.data()), back.size());
    }
    return client->handshake_done() && t->ready();
  }

  testing::FakeTransport* sock = nullptr;
  std::unique_ptr<TlsTransport> t;
  User user;

 private:
  uv_loop_t loop_;
};

TEST(TlsTransportStates, IdleUntilReadingStartsThenHandshaking) {
  Rig rig(/*server=*/false);
  EXPECT_EQ(rig.t->state(), State::kIdle);
  EXPECT_FALSE(rig.t->ready());
  EXPECT_TRUE(rig.sock->sent().empty()) << "nothing is sent before the handshake starts";
  ASSERT_EQ(rig.t->start_reading(), 0);
  EXPECT_EQ(rig.t->state(), State::kHandshaking);
  EXPECT_FALSE(rig.sock->sent().empty()) << "the ClientHello";
  EXPECT_TRUE(rig.sock->reading()) << "the socket is read during the handshake";
  rig.t->stop_reading();
  EXPECT_TRUE(rig.sock->reading()) << "whatever the user wants";
}

TEST(TlsTransportStates, FinishedHandshakeIsReadyAndToldOnce) {
  Rig rig(/*server=*/true);
  ASSERT_EQ(rig.t->start_reading(), 0);
  ASSERT_TRUE(rig.handshake_with_client());
  EXPECT_EQ(rig.t->state(), State::kReady);
  EXPECT_EQ(rig.user.ready_calls, 1);
  EXPECT_EQ(rig.user.ready_status, 0);
  rig.t->time_out(10);  // too late: no effect
  rig.run();
  EXPECT_EQ(rig.t->state(), State::kReady);
  EXPECT_EQ(rig.user.ready_calls, 1);
}

TEST(TlsTransportStates, PeerClosingDuringTheHandshakeFails) {
  Rig rig(/*server=*/false);
  ASSERT_EQ(rig.t->start_reading(), 0);
  rig.sock->peer_closes();
  rig.run();
  EXPECT_EQ(rig.t->state(), State::kFailed);
  EXPECT_EQ(rig.user.ready_calls, 1);
  EXPECT_EQ(rig.user.ready_status, UV_EOF);
  EXPECT_FALSE(rig.t->ready());
}

TEST(TlsTransportStates, OwnersDeadlineFailsTheHandshakeAndIsToldFromTheLoop) {
  Rig rig(/*server=*/false);
  ASSERT_EQ(rig.t->start_reading(), 0);
  rig.t->time_out(250);
  EXPECT_EQ(rig.t->state(), State::kFailed) << "failed (and counted) at once";
  EXPECT_EQ(rig.user.ready_calls, 0) << "told later, from the loop";
  rig.run();
  EXPECT_EQ(rig.user.ready_calls, 1);
  EXPECT_EQ(rig.user.ready_status, UV_ETIMEDOUT);
}

TEST(TlsTransportStates, FailedStaysFailed) {
  Rig rig(/*server=*/false);
  ASSERT_EQ(rig.t->start_reading(), 0);
  rig.t->time_out(250);
  rig.run();
  rig.t->time_out(250);
  EXPECT_EQ(rig.t->start_reading(), 0);
  uv_buf_t b = uv_buf_init(const_cast<char*>("x"), 1);
  EXPECT_EQ(rig.t->write(&b, 1), UV_EPROTO);
  EXPECT_EQ(rig.t->try_write(&b, 1), UV_EPROTO);
  rig.run();
  EXPECT_EQ(rig.t->state(), State::kFailed);
  EXPECT_EQ(rig.user.ready_calls, 1) << "told once";
}

TEST(TlsTransportStates, PlaintextPeerWhereAllowedIsPlain) {
  Rig rig(/*server=*/true);
  rig.t->allow_plaintext();
  ASSERT_EQ(rig.t->start_reading(), 0);
  rig.sock->peer_sends(kPlaintextFrame);
  rig.run();
  EXPECT_EQ(rig.t->state(), State::kPlain);
  EXPECT_TRUE(rig.t->plaintext());
  EXPECT_TRUE(rig.t->ready());
  EXPECT_EQ(rig.user.ready_calls, 1);
  EXPECT_EQ(rig.user.ready_status, 0);
  EXPECT_EQ(rig.user.got, kPlaintextFrame) << "the first bytes, untouched";
  uv_buf_t b = uv_buf_init(const_cast<char*>("back"), 4);
  rig.sock->take_sent();
  EXPECT_EQ(rig.t->try_write(&b, 1), 4);
  EXPECT_EQ(rig.sock->take_sent(), "back") << "written as they are";
}

TEST(TlsTransportStates, PlaintextPeerWhereNotAllowedFails) {
  Rig rig(/*server=*/true);
  ASSERT_EQ(rig.t->start_reading(), 0);
  rig.sock->peer_sends(kPlaintextFrame);
  rig.run();
  EXPECT_EQ(rig.t->state(), State::kFailed);
  EXPECT_EQ(rig.user.ready_calls, 1);
  EXPECT_EQ(rig.user.ready_status, UV_EPROTO);
  EXPECT_TRUE(rig.user.got.empty());
}

TEST(TlsTransportStates, TlsPeerWhereAllowedStillHandshakes) {
  Rig rig(/*server=*/true);
  rig.t->allow_plaintext();
  ASSERT_EQ(rig.t->start_reading(), 0);
  ASSERT_TRUE(rig.handshake_with_client());
  EXPECT_EQ(rig.t->state(), State::kReady);
  EXPECT_FALSE(rig.t->plaintext());
}

TEST(TlsTransportStates, CloseFromHandshakingTellsOnlyTheClose) {
  Rig rig(/*server=*/false);
  ASSERT_EQ(rig.t->start_reading(), 0);
  rig.t->close();
  EXPECT_EQ(rig.t->state(), State::kClosing);
  uv_buf_t b = uv_buf_init(const_cast<char*>("x"), 1);
  EXPECT_EQ(rig.t->write(&b, 1), UV_EPROTO);
  rig.run();
  EXPECT_TRUE(rig.user.closed);
  EXPECT_EQ(rig.user.ready_calls, 0);
}

TEST(TlsTransportStates, StateNamesAreStable) {
  EXPECT_STREQ(TlsTransport::state_name(State::kIdle), "idle");
  EXPECT_STREQ(TlsTransport::state_name(State::kHandshaking), "handshaking");
  EXPECT_STREQ(TlsTransport::state_name(State::kReady), "ready");
  EXPECT_STREQ(TlsTransport::state_name(State::kPlain), "plain");
  EXPECT_STREQ(TlsTransport::state_name(State::kFailed), "failed");
  EXPECT_STREQ(TlsTransport::state_name(State::kClosing), "closing");
}

}  // namespace
}  // namespace epochgate::proxy::tls
