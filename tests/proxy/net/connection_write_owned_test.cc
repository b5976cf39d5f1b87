// tests/proxy/net/connection_write_owned_test.cc: Connection::write_owned() and
// the output chain on a real loopback TCP pair. A buffer handed over joins
// the chain behind queued bytes, also while a write is in flight; the peer
// reads every byte once and in order, queued_bytes() and the buffer budget
// count the handed-over buffer until it is written, and nothing is left
// charged afterwards.
#include "proxy/net/connection.h"
#include "proxy/net/tcp_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace epochgate::proxy {
namespace {

struct Owner : ConnectionOwner {
  void on_readable(Connection&) override {}
  void on_read_error(Connection&, int) override {}
  void on_drained(Connection&) override { ++drained; }
  void on_write_error(Connection&, int status) override { write_error = status; }
  void on_closed(Connection&) override { closed = true; }
  int drained = 0;
  int write_error = 0;
  bool closed = false;
};

/// A connected loopback pair with a small send buffer on `ours`, so writes
/// stay in flight; `peer` is read from.
struct SocketPair {
  int ours = -1, peer = -1;
  SocketPair() {
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    listen(listener, 1);
    ours = socket(AF_INET, SOCK_STREAM, 0);
    int sndbuf = 8192;
    setsockopt(ours, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    connect(ours, reinterpret_cast<sockaddr*>(&a), sizeof a);
    peer = accept(listener, nullptr, nullptr);
    int rcvbuf = 8192;
    setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    close(listener);
  }
  ~SocketPair() {
    if (peer >= 0) close(peer);
  }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 13 + (i >> 11));
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

/// A buffer holding `bytes` as its unread bytes, the way take_input() hands one over.
ByteBuffer owned(const std::vector<uint8_t>& bytes) {
  ByteBuffer b(bytes.size());
  std::memcpy(b.tail(), bytes.data(), bytes.size());
  b.commit(bytes.size());
  return b;
}

class WriteOwned : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    uv_loop_init(&loop_);
  }
  void TearDown() override { uv_loop_close(&loop_); }
  void finish(Connection& c) {
    c.close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_TRUE(owner_.closed);
  }
  uv_loop_t loop_;
  BufferPool pool_;
  Owner owner_;
};

TEST_F(WriteOwned, HandedOverBuffersKeepTheirPlaceBetweenQueuedFramesWhileAWriteIsInFlight) {
  SocketPair pair;
  auto tcp = std::make_unique<TcpTransport>(&loop_);
  ASSERT_EQ(tcp->open(pair.ours), 0);
  Connection c(std::move(tcp), pool_, owner_);
  BufferBudget budget;
  c.set_budget(&budget, false);
  std::vector<std::vector<uint8_t>> parts;
  std::vector<uint8_t> want;
  auto add = [&](std::vector<uint8_t> p) {
    want.insert(want.end(), p.begin(), p.end());
    parts.push_back(std::move(p));
  };
  // Enough to fill the socket so that a write stays in flight.
  add(pattern(300000, 1));
  c.write_through(parts.back().data(), parts.back().size());
  c.flush();
  ASSERT_GT(c.queued_bytes(), 0u) << "the small socket buffer should have refused bytes";
  add(pattern(700, 2));
  c.queue(parts.back().data(), parts.back().size());
  add(pattern(250000, 3));
  c.write_owned(owned(parts.back()));
  add(pattern(90, 4));
  c.queue(parts.back().data(), parts.back().size());
  add(pattern(40000, 5));
  c.write_through(parts.back().data(), parts.back().size());
  add(pattern(70000, 6));
  c.write_owned(owned(parts.back()));
  add(pattern(20, 7));
  c.queue(parts.back().data(), parts.back().size());
  for (auto& p : parts) p.assign(p.size(), 0xEE);  // the callers' copies are gone
  EXPECT_EQ(c.bytes_accepted(), want.size());
  // Both handed-over buffers wait until written and are counted as such.
  EXPECT_GE(c.queued_bytes(), 250000u + 70000u);
  EXPECT_GE(budget.used(), static_cast<int64_t>(250000 + 70000));
  c.flush();
  std::thread reader([&] {
    std::vector<uint8_t> got = read_all(pair.peer, want.size());
    EXPECT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want) << "bytes reordered or corrupted";
  });
  for (int i = 0; i < 100000 && c.queued_bytes() > 0 && owner_.write_error == 0; ++i)
    uv_run(&loop_, UV_RUN_ONCE);
  reader.join();
  EXPECT_EQ(owner_.write_error, 0);
  EXPECT_EQ(c.queued_bytes(), 0u);
  EXPECT_EQ(c.bytes_written(), want.size());
  EXPECT_EQ(budget.used(), 0) << "output storage still charged after everything was written";
  finish(c);
}

TEST_F(WriteOwned, AHandedOverBufferCountsTowardsTheHighWatermarkUntilWritten) {
  SocketPair pair;
  auto tcp = std::make_unique<TcpTransport>(&loop_);
  ASSERT_EQ(tcp->open(pair.ours), 0);
  Connection c(std::move(tcp), pool_, owner_);
  c.set_watermarks(64 * 1024, 256 * 1024);
  auto first = pattern(200000, 8), big = pattern(600000, 9);
  c.write_through(first.data(), first.size());
  c.flush();
  c.write_owned(owned(big));
  // A slow reader: the owner sees the connection above its high watermark
  // (and pauses its producer) and hears on_drained() once it is written.
  EXPECT_TRUE(c.above_high_watermark());
  std::vector<uint8_t> want(first);
  want.insert(want.end(), big.begin(), big.end());
  std::thread reader([&] { EXPECT_TRUE(read_all(pair.peer, want.size()) == want); });
  for (int i = 0; i < 100000 && c.queued_bytes() > 0 && owner_.write_error == 0; ++i)
    uv_run(&loop_, UV_RUN_ONCE);
  reader.join();
  EXPECT_EQ(owner_.write_error, 0);
  EXPECT_FALSE(c.above_high_watermark());
  EXPECT_GE(owner_.drained, 1);
  finish(c);
}

TEST_F(WriteOwned, WithNoWriteInFlightWhatTheSocketTakesAtOnceIsNotQueued) {
  SocketPair pair;
  auto tcp = std::make_unique<TcpTransport>(&loop_);
  ASSERT_EQ(tcp->open(pair.ours), 0);
  Connection c(std::move(tcp), pool_, owner_);
  auto frame = pattern(100000, 10);
  c.write_owned(owned(frame));
  // One try-write went out at once; only the rest waits in the buffer.
  EXPECT_GT(c.bytes_written(), 0u);
  EXPECT_EQ(c.queued_bytes(), frame.size() - c.bytes_written());
  c.flush();
  std::thread reader([&] { EXPECT_TRUE(read_all(pair.peer, frame.size()) == frame); });
  for (int i = 0; i < 100000 && c.queued_bytes() > 0 && owner_.write_error == 0; ++i)
    uv_run(&loop_, UV_RUN_ONCE);
  reader.join();
  EXPECT_EQ(c.bytes_written(), frame.size());
  finish(c);
}

}  // namespace
}  // namespace epochgate::proxy
