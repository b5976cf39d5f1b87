// tests/proxy/tls_transport_test.cc: TlsTransport keeps the transport
// contract (proxy/transport.h) when its owner fails it: a handshake the
// owner times out (the upstream dial's deadline) is counted at once but
// told to the user from the loop, never from inside time_out(). The inner
// socket is the in-memory FakeTransport; the TLS is OpenSSL's.
#include <gtest/gtest.h>
#include <uv.h>

#include "fake_transport.h"
#include "proxy/tls/tls_context.h"
#include "proxy/tls/tls_engine.h"
#include "proxy/tls/tls_transport.h"
#include "tls_test_support.h"

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
                   "upstream", 0, nullptr);
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
                   "upstream", 0, nullptr);
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

}  // namespace
}  // namespace epochgate::proxy::tls
