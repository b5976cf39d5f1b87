// tests/proxy/net/connection_write_through_test.cc: Connection::write_through()
// on a real loopback TCP pair. Large unchanged frames go from the buffer they
// were read into straight to the socket; what the socket does not take is
// copied, and the bytes arrive complete and in order with queued ones.
#include "proxy/net/connection.h"
#include "proxy/net/tcp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace epochgate::proxy {
namespace {

struct Owner : ConnectionOwner {
  void on_readable(Connection&) override {}
  void on_read_error(Connection&, int) override {}
  void on_drained(Connection&) override {}
  void on_write_error(Connection&, int status) override { write_error = status; }
  void on_closed(Connection&) override { closed = true; }
  int write_error = 0;
  bool closed = false;
};

/// A connected loopback pair: `ours` for the Connection, `peer` to read from.
struct SocketPair {
  int ours = -1, peer = -1;
  SocketPair(int send_buffer_bytes) {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    listen(listener, 1);
    ours = socket(AF_INET, SOCK_STREAM, 0);
    if (send_buffer_bytes > 0)
      setsockopt(ours, SOL_SOCKET, SO_SNDBUF, &send_buffer_bytes, sizeof send_buffer_bytes);
    connect(ours, reinterpret_cast<sockaddr*>(&a), sizeof a);
    peer = accept(listener, nullptr, nullptr);
    close(listener);
  }
  ~SocketPair() {
    if (peer >= 0) close(peer);
  }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 9));
  return v;
}

/// Reads exactly `n` bytes from `fd` (blocking, on its own thread).
std::vector<uint8_t> read_all(int fd, size_t n) {
  std::vector<uint8_t> got(n);
  size_t have = 0;
  while (have < n) {
    ssize_t r = ::read(fd, got.data() + have, n - have);
    if (r <= 0) break;
    have += static_cast<size_t>(r);
  }
  got.resize(have);
  return got;
}

class WriteThrough : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);  // as epochgate's main does: EPIPE, not a signal
    uv_loop_init(&loop_);
  }
  void TearDown() override { uv_loop_close(&loop_); }
  /// Closes `c` and runs the loop until its close callback ran.
  void finish(Connection& c) {
    c.close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_TRUE(owner_.closed);
  }
  uv_loop_t loop_;
  BufferPool pool_;
  Owner owner_;
};

TEST_F(WriteThrough, QueuedBytesThenLargeFrameArriveInOrder) {
  SocketPair pair(0);
  auto tcp = std::make_unique<TcpTransport>(&loop_);
  ASSERT_EQ(tcp->open(pair.ours), 0);
  Connection c(std::move(tcp), pool_, owner_);
  auto small = pattern(300, 1), large = pattern(200000, 2), tail = pattern(50, 3);
  std::vector<uint8_t> want(small);
  want.insert(want.end(), large.begin(), large.end());
  want.insert(want.end(), tail.begin(), tail.end());
  std::thread reader([&] { EXPECT_EQ(read_all(pair.peer, want.size()), want); });
  c.queue(small.data(), small.size());
  c.write_through(large.data(), large.size());
  large.assign(large.size(), 0xEE);  // the caller's bytes are its own again
  c.queue(tail.data(), tail.size());
  c.flush();
  EXPECT_EQ(c.bytes_accepted(), want.size());
  while (c.queued_bytes() > 0 && owner_.write_error == 0) uv_run(&loop_, UV_RUN_ONCE);
  reader.join();
  EXPECT_EQ(owner_.write_error, 0);
  EXPECT_EQ(c.bytes_written(), want.size());
  finish(c);
}

TEST_F(WriteThrough, WhatTheSocketRefusesIsCopiedAndSentLater) {
  SocketPair pair(8192);  // a small send buffer: the try-write takes only part
  auto tcp = std::make_unique<TcpTransport>(&loop_);
  ASSERT_EQ(tcp->open(pair.ours), 0);
  Connection c(std::move(tcp), pool_, owner_);
  std::vector<uint8_t> want;
  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 6; ++i) frames.push_back(pattern(40000 + i * 1000, static_cast<uint8_t>(i)));
  for (const auto& f : frames) want.insert(want.end(), f.begin(), f.end());
  for (auto& f : frames) {
    c.write_through(f.data(), f.size());
    f.assign(f.size(), 0xAA);  // overwritten at once: copies must be taken
  }
  EXPECT_GT(c.queued_bytes(), 0u) << "a small socket buffer should have refused some bytes";
  c.flush();
  std::thread reader([&] { EXPECT_EQ(read_all(pair.peer, want.size()), want); });
  while (c.queued_bytes() > 0 && owner_.write_error == 0) uv_run(&loop_, UV_RUN_ONCE);
  reader.join();
  EXPECT_EQ(owner_.write_error, 0);
  EXPECT_EQ(c.bytes_accepted(), want.size());
  finish(c);
}

TEST_F(WriteThrough, ErrorSurfacesFromTheNextFlushNotFromTheCall) {
  SocketPair pair(0);
  auto tcp = std::make_unique<TcpTransport>(&loop_);
  ASSERT_EQ(tcp->open(pair.ours), 0);
  Connection c(std::move(tcp), pool_, owner_);
  // The peer resets the connection: writes now fail with EPIPE/ECONNRESET.
  linger lg{1, 0};
  setsockopt(pair.peer, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(pair.peer);
  pair.peer = -1;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto frame = pattern(30000, 9);
  c.write_through(frame.data(), frame.size());
  EXPECT_EQ(owner_.write_error, 0) << "write_through never calls back into its owner";
  c.flush();
  while (owner_.write_error == 0 && uv_run(&loop_, UV_RUN_ONCE) != 0) {
  }
  EXPECT_NE(owner_.write_error, 0);
  finish(c);
}

}  // namespace
}  // namespace epochgate::proxy
