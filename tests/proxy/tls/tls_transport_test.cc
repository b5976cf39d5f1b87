// tests/proxy/tls/tls_transport_test.cc: TlsTransport keeps the transport
// contract (proxy/net/transport.h) when its owner fails it: a handshake the
// owner times out (the upstream dial's deadline) is counted at once but
// told to the user from the loop, never from inside time_out(). The inner
// socket is the in-memory FakeTransport; the TLS is OpenSSL's.
#include <gtest/gtest.h>
#include <uv.h>

#include <algorithm>

#include "proxy/tls/tls_context.h"
#include "proxy/tls/tls_engine.h"
#include "proxy/tls/tls_transport.h"
#include "tests/proxy/fake_transport.h"
#include "tests/proxy/tls_test_support.h"

namespace epochgate::proxy::tls {
namespace {

struct Recorder final : TransportUser {
  int ready_calls = 0;
  int ready_status = 0;
  bool closed = false;
  void on_transport_alloc(uv_buf_t* b) override { *b = uv_buf_init(nullptr, 0); }
  void on_transport_read(ssize_t) override {}
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

TEST(TlsTransportContract, TimeOutTellsTheUserFromTheLoopNotFromInsideTheCall) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  auto inner = std::make_unique<testing::FakeTransport>();
  testing::FakeTransport* sock = inner.get();
  Recorder user;
  {
    TlsTransport t(&loop, std::move(inner), TlsEngine::client(client_ctx(), "localhost"),
                   TlsTransport::Side::kUpstream, 0, nullptr);
    t.set_user(user);
    ASSERT_EQ(t.start_reading(), 0);
    EXPECT_FALSE(sock->sent().empty());  // the ClientHello reached the socket
    EXPECT_FALSE(t.ready());
    t.time_out(250);
    EXPECT_EQ(user.ready_calls, 0) << "called back from inside time_out()";
    EXPECT_FALSE(t.ready());
    for (int i = 0; i < 10 && user.ready_calls == 0; ++i) uv_run(&loop, UV_RUN_NOWAIT);
    EXPECT_EQ(user.ready_calls, 1);
    EXPECT_EQ(user.ready_status, UV_ETIMEDOUT);
    EXPECT_EQ(t.engine().failure(), Failure::kTimeout);
    t.close();
    sock->pump();
    for (int i = 0; i < 10 && !user.closed; ++i) uv_run(&loop, UV_RUN_NOWAIT);
    EXPECT_TRUE(user.closed);
    EXPECT_EQ(user.ready_calls, 1);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(TlsTransportContract, ClosedBeforeTheLoopRunsTheUserHearsOnlyTheClose) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  auto inner = std::make_unique<testing::FakeTransport>();
  testing::FakeTransport* sock = inner.get();
  Recorder user;
  {
    TlsTransport t(&loop, std::move(inner), TlsEngine::client(client_ctx(), "localhost"),
                   TlsTransport::Side::kUpstream, 0, nullptr);
    t.set_user(user);
    ASSERT_EQ(t.start_reading(), 0);
    t.time_out(250);
    t.close();  // what the dialer does right after: the attempt is over
    sock->pump();
    for (int i = 0; i < 10 && !user.closed; ++i) uv_run(&loop, UV_RUN_NOWAIT);
    EXPECT_TRUE(user.closed);
    EXPECT_EQ(user.ready_calls, 0);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
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

// A user that reads into a buffer of its own, as much as `room` allows.
struct Reader final : TransportUser {
  std::string got;
  size_t room = 0;
  int enobufs = 0;
  char buf[4096];
  void on_transport_alloc(uv_buf_t* b) override {
    *b = uv_buf_init(room > 0 ? buf : nullptr, static_cast<unsigned>(std::min(room, sizeof buf)));
  }
  void on_transport_read(ssize_t n) override {
    if (n == UV_ENOBUFS) ++enobufs;
    if (n <= 0) return;
    got.append(buf, static_cast<size_t>(n));
    room -= std::min(room, static_cast<size_t>(n));
  }
  void on_transport_written(int) override {}
  void on_transport_ready(int) override {}
  void on_transport_closed() override {}
};

// Ciphertext the user had no room for yet stays readable after the loop's
// read buffer was reused for another connection's bytes: the transport
// decrypts from that buffer in place, so it must keep the unread rest.
TEST(TlsTransportContract, UnreadCiphertextSurvivesTheReadBufferBeingReused) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  auto inner = std::make_unique<testing::FakeTransport>();
  testing::FakeTransport* sock = inner.get();
  sock->set_try_write_limit(1 << 20);
  Reader user;
  auto other_inner = std::make_unique<testing::FakeTransport>();
  testing::FakeTransport* other_sock = other_inner.get();
  Reader other_user;
  {
    TlsTransport t(&loop, std::move(inner), TlsEngine::server(server_ctx()), TlsTransport::Side::kClient, 0, nullptr);
    TlsTransport other(&loop, std::move(other_inner), TlsEngine::server(server_ctx()), TlsTransport::Side::kClient, 0,
                       nullptr);
    t.set_user(user);
    other.set_user(other_user);
    ASSERT_EQ(t.start_reading(), 0);
    ASSERT_EQ(other.start_reading(), 0);
    auto client = TlsEngine::client(client_ctx(), "localhost");
    auto shuttle = [&] {  // client <-> server until both are done (bounded)
      uint8_t b[16384];
      for (int i = 0; i < 50 && !(client->handshake_done() && t.ready()); ++i) {
        client->handshake();
        std::string out;
        while (size_t n = client->take_output(b, sizeof b)) out.append(reinterpret_cast<char*>(b), n);
        if (!out.empty()) sock->peer_sends(out);
        sock->pump();
        uv_run(&loop, UV_RUN_NOWAIT);
        std::string back = sock->take_sent();
        if (!back.empty()) client->receive(reinterpret_cast<const uint8_t*>(back.data()), back.size());
      }
    };
    shuttle();
    ASSERT_TRUE(client->handshake_done() && t.ready()) << client->detail();
    // Three records in one socket read; room for the first one only.
    for (const char* r : {"aaa", "bbb", "ccc"})
      ASSERT_TRUE(client->send(reinterpret_cast<const uint8_t*>(r), 3));
    uint8_t b[16384];
    std::string records;
    while (size_t n = client->take_output(b, sizeof b)) records.append(reinterpret_cast<char*>(b), n);
    user.room = 3;
    sock->peer_sends(records);
    sock->pump();
    uv_run(&loop, UV_RUN_NOWAIT);
    EXPECT_EQ(user.got, "aaa");
    EXPECT_EQ(user.enobufs, 1);
    // Another connection on this loop reads: the shared read buffer is overwritten.
    other_sock->peer_sends(std::string(records.size(), 'X'));
    other_sock->pump();
    // Room again: the rest is still there, intact.
    user.room = 100;
    ASSERT_EQ(t.start_reading(), 0);
    for (int i = 0; i < 10 && user.got.size() < 9; ++i) {
      uv_run(&loop, UV_RUN_NOWAIT);
      sock->pump();
    }
    EXPECT_EQ(user.got, "aaabbbccc") << t.engine().detail();
    t.close();
    other.close();
    sock->pump();  // the inner transports report their close
    other_sock->pump();
    for (int i = 0; i < 10; ++i) uv_run(&loop, UV_RUN_NOWAIT);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

}  // namespace
}  // namespace epochgate::proxy::tls
