// tests/proxy/net/tcp_transport_test.cc: TcpTransport on a real loopback TCP
// pair, checked from the other socket's side with plain system calls: bytes
// read land in the room the user gave, vectored writes arrive whole and in
// order, shutdown sends a FIN the peer reads as end of stream, a peer's close
// is reported as UV_EOF (and seen by peer_closed() while reads are paused).
#include "proxy/net/tcp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace epochgate::proxy {
namespace {

/// Records every callback; hands out room from `room` (empty: no room).
struct User : TransportUser {
  void on_transport_alloc(uv_buf_t* buf) override {
    ++allocs;
    buf->base = reinterpret_cast<char*>(room.data() + filled);
    buf->len = room.size() - filled;
  }
  void on_transport_read(ssize_t n) override {
    if (n > 0)
      filled += static_cast<size_t>(n);
    else
      read_error = static_cast<int>(n);
  }
  void on_transport_written(int status) override {
    ++writes_done;
    write_status = status;
  }
  void on_transport_ready(int) override { ++ready_calls; }
  void on_transport_closed() override { closed = true; }

  std::vector<uint8_t> room;
  size_t filled = 0;
  int allocs = 0;
  int read_error = 0;
  int writes_done = 0;
  int write_status = 1;
  int ready_calls = 0;
  bool closed = false;
};

/// A connected loopback pair: `ours` for the transport, `peer` for the test.
struct SocketPair {
  int ours = -1, peer = -1;
  uint16_t ours_port = 0;
  SocketPair() {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    listen(listener, 1);
    peer = socket(AF_INET, SOCK_STREAM, 0);
    connect(peer, reinterpret_cast<sockaddr*>(&a), sizeof a);
    sockaddr_in p{};
    len = sizeof p;
    getsockname(peer, reinterpret_cast<sockaddr*>(&p), &len);
    ours_port = ntohs(p.sin_port);
    ours = accept(listener, nullptr, nullptr);
    close(listener);
  }
  ~SocketPair() {
    if (peer >= 0) close(peer);
  }
};

/// Reads exactly `n` bytes from `fd` (blocking; gives up after 10 s).
std::string read_exactly(int fd, size_t n) {
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got(n, '\0');
  size_t have = 0;
  while (have < n) {
    ssize_t r = ::read(fd, got.data() + have, n - have);
    if (r <= 0) break;
    have += static_cast<size_t>(r);
  }
  got.resize(have);
  return got;
}

class TcpTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    uv_loop_init(&loop_);
  }
  void TearDown() override { uv_loop_close(&loop_); }
  /// Runs the loop until `done()` or 5 s passed.
  template <typename F>
  bool run_until(F done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < deadline) uv_run(&loop_, UV_RUN_NOWAIT);
    return done();
  }
  void finish(TcpTransport& t) {
    t.close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_TRUE(user_.closed);
  }
  uv_loop_t loop_;
  User user_;
};

TEST_F(TcpTransportTest, ReadsLandInTheRoomTheUserGave) {
  SocketPair pair;
  TcpTransport t(&loop_);
  t.set_user(user_);
  ASSERT_EQ(t.open(pair.ours), 0);
  EXPECT_TRUE(t.ready());
  EXPECT_TRUE(t.writes_in_place());
  user_.room.resize(64);
  ASSERT_EQ(t.start_reading(), 0);
  ASSERT_EQ(::write(pair.peer, "hello kafka", 11), 11);
  ASSERT_TRUE(run_until([&] { return user_.filled == 11; }));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(user_.room.data()), 11), "hello kafka");
  EXPECT_EQ(user_.read_error, 0);
  EXPECT_EQ(user_.ready_calls, 0);  // plain TCP has no handshake
  finish(t);
}

TEST_F(TcpTransportTest, NoRoomReportsNoBuffersAndStopsReading) {
  SocketPair pair;
  TcpTransport t(&loop_);
  t.set_user(user_);
  ASSERT_EQ(t.open(pair.ours), 0);
  ASSERT_EQ(t.start_reading(), 0);  // room stays empty
  ASSERT_EQ(::write(pair.peer, "x", 1), 1);
  ASSERT_TRUE(run_until([&] { return user_.read_error != 0; }));
  EXPECT_EQ(user_.read_error, UV_ENOBUFS);
  EXPECT_EQ(user_.filled, 0u);
  finish(t);
}

TEST_F(TcpTransportTest, VectoredTryWriteAndWriteArriveInOrder) {
  SocketPair pair;
  TcpTransport t(&loop_);
  t.set_user(user_);
  ASSERT_EQ(t.open(pair.ours), 0);
  std::string a = "first,", b = "second,", c(300000, 'c'), d = "end";
  uv_buf_t two[2] = {uv_buf_init(a.data(), a.size()), uv_buf_init(b.data(), b.size())};
  ASSERT_EQ(t.try_write(two, 2), static_cast<ssize_t>(a.size() + b.size()));
  uv_buf_t big[2] = {uv_buf_init(c.data(), c.size()), uv_buf_init(d.data(), d.size())};
  ASSERT_EQ(t.write(big, 2), 0);
  std::string got;
  std::thread reader([&] { got = read_exactly(pair.peer, a.size() + b.size() + c.size() + d.size()); });
  bool done = run_until([&] { return user_.writes_done == 1; });
  reader.join();
  ASSERT_TRUE(done);
  EXPECT_EQ(user_.write_status, 0);
  EXPECT_EQ(got, a + b + c + d);
  finish(t);
}

TEST_F(TcpTransportTest, ShutdownSendsEndOfStreamAfterPendingWrites) {
  SocketPair pair;
  TcpTransport t(&loop_);
  t.set_user(user_);
  ASSERT_EQ(t.open(pair.ours), 0);
  std::string last(100000, 'z');
  uv_buf_t b = uv_buf_init(last.data(), last.size());
  ASSERT_EQ(t.write(&b, 1), 0);
  ASSERT_EQ(t.shutdown(), 0);
  std::string got;
  ssize_t after = -2;
  std::thread reader([&] {
    got = read_exactly(pair.peer, last.size());
    char c;
    after = ::read(pair.peer, &c, 1);  // 0: FIN
  });
  run_until([&] { return user_.writes_done == 1 && after != -2; });
  reader.join();
  EXPECT_EQ(got, last);
  EXPECT_EQ(after, 0);
  finish(t);
}

TEST_F(TcpTransportTest, PeerCloseIsEndOfStreamAndSeenWhilePaused) {
  SocketPair pair;
  TcpTransport t(&loop_);
  t.set_user(user_);
  ASSERT_EQ(t.open(pair.ours), 0);
  EXPECT_EQ(t.peer(), "127.0.0.1:" + std::to_string(pair.ours_port));
  EXPECT_FALSE(t.peer_closed());
  ::close(pair.peer);
  pair.peer = -1;
  // Not reading: the FIN waits in the socket, yet peer_closed() sees it.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!t.peer_closed() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(t.peer_closed());
  user_.room.resize(16);
  ASSERT_EQ(t.start_reading(), 0);
  ASSERT_TRUE(run_until([&] { return user_.read_error != 0; }));
  EXPECT_EQ(user_.read_error, UV_EOF);
  finish(t);
}

TEST_F(TcpTransportTest, CloseCancelsAWriteTheSocketCouldNotTake) {
  SocketPair pair;
  int small = 4096;
  setsockopt(pair.ours, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  TcpTransport t(&loop_);
  t.set_user(user_);
  ASSERT_EQ(t.open(pair.ours), 0);
  std::string huge(8 << 20, 'h');  // the peer reads nothing: stays in flight
  uv_buf_t b = uv_buf_init(huge.data(), huge.size());
  ASSERT_EQ(t.write(&b, 1), 0);
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_EQ(user_.writes_done, 0);
  t.close();
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_EQ(user_.writes_done, 1);
  EXPECT_EQ(user_.write_status, UV_ECANCELED);
  EXPECT_TRUE(user_.closed);
  EXPECT_EQ(t.try_write(&b, 1), UV_EPIPE);  // nothing goes out after close
}

}  // namespace
}  // namespace epochgate::proxy
