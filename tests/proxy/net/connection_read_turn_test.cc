// tests/proxy/net/connection_read_turn_test.cc: ConnectionOwner::take_read_turn()
// over a real TcpTransport on loopback. An owner that reads the socket itself
// from the alloc callback (as a splice does) and gives no room keeps the
// connection reading: libuv offers the socket again while bytes wait
// (level-triggered), the bytes the owner took and the ones read into the input afterwards come
// once and in order, and a turn that met the peer's end reports UV_EOF as a
// read would. An owner that asks for a read after its turn
// (Connection::read_after_turn()) gets the turn's bytes and the read's in
// one on_readable(), also when the read finds nothing or the peer's end.
// Connection::set_first_read_bytes() caps reads while no frame is in
// progress, and only then.
#include "proxy/net/connection.h"
#include "proxy/net/tcp_transport.h"
#include "tests/proxy/net/loopback_tcp.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

namespace epochgate::proxy {
namespace {

/// Takes `turns` turns, reading up to `chunk` bytes each straight from the
/// socket; then lets the connection read into its input.
struct TurnOwner : ConnectionOwner {
  void on_readable(Connection& c) override {
    ByteBuffer& in = c.input();
    reports.push_back({from_turns.size(), in.size()});
    from_input.insert(from_input.end(), in.begin(), in.begin() + in.size());
    in.consume(in.size());
    ++readable;
  }
  void on_read_error(Connection&, int status) override { read_errors.push_back(status); }
  void on_drained(Connection&) override {}
  void on_write_error(Connection&, int) override {}
  void on_closed(Connection&) override { closed = true; }
  ssize_t take_read_turn(Connection& c) override {
    if (turns == 0) return 0;
    --turns;
    uint8_t buf[4096];
    ssize_t n = ::read(c.splice_fd(), buf, std::min(sizeof buf, chunk));
    if (n > 0) {
      from_turns.insert(from_turns.end(), buf, buf + n);
      order.push_back('t');
      if (read_after > 0) c.read_after_turn(read_after);
      return n;
    }
    if (n == 0) return UV_EOF;
    ++empty_turns;
    return errno == EAGAIN ? UV_EAGAIN : -errno;
  }
  int turns = 0;
  size_t chunk = 1000;
  size_t read_after = 0;  // Connection::read_after_turn() after a turn that moved bytes
  struct Report {
    size_t turned;  // bytes taken by turns so far
    size_t input;   // bytes in the input at this on_readable()
  };
  std::vector<Report> reports;
  int readable = 0;
  int empty_turns = 0;
  bool closed = false;
  std::vector<int> read_errors;
  std::vector<uint8_t> from_turns, from_input;
  std::vector<char> order;
};

class ReadTurn : public ::testing::Test {
 protected:
  ReadTurn() : pool_(64 * 1024, 8) { uv_loop_init(&loop_); }
  ~ReadTurn() override {
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_loop_close(&loop_);
  }
  /// Runs the loop until `done` or a bounded number of turns.
  template <typename Done>
  void run_until(Done done) {
    for (int i = 0; i < 20000 && !done(); ++i) uv_run(&loop_, UV_RUN_NOWAIT);
  }
  uv_loop_t loop_;
  BufferPool pool_;
};

TEST_F(ReadTurn, TurnsKeepReadingAndEveryByteComesOnceInOrder) {
  LoopbackTcp pair;
  auto tcp = std::make_unique<TcpTransport>(&loop_);
  ASSERT_EQ(tcp->open(pair.a), 0);
  pair.a = -1;  // the transport owns it now
  TurnOwner owner;
  owner.turns = 25;  // 25,000 bytes by turns at most, the rest read as usual
  Connection c(std::move(tcp), pool_, owner);
  c.start_reading();
  std::vector<uint8_t> want(60000);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 31 + (i >> 9));
  ASSERT_EQ(::write(pair.b, want.data(), want.size()), static_cast<ssize_t>(want.size()));
  run_until([&] { return owner.from_turns.size() + owner.from_input.size() >= want.size(); });
  EXPECT_TRUE(owner.read_errors.empty()) << owner.read_errors.front();
  EXPECT_TRUE(c.reading());
  EXPECT_GT(owner.from_turns.size(), 0u);
  EXPECT_GT(owner.from_input.size(), 0u);
  std::vector<uint8_t> got = owner.from_turns;
  got.insert(got.end(), owner.from_input.begin(), owner.from_input.end());
  EXPECT_TRUE(got == want) << "bytes lost, repeated or reordered";
  EXPECT_EQ(c.bytes_read(), want.size());
  c.close();
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_TRUE(owner.closed);
}

TEST_F(ReadTurn, ATurnAtThePeersEndIsUvEof) {
  LoopbackTcp pair;
  auto tcp = std::make_unique<TcpTransport>(&loop_);
  ASSERT_EQ(tcp->open(pair.a), 0);
  pair.a = -1;  // the transport owns it now
  TurnOwner owner;
  owner.turns = 1000;
  Connection c(std::move(tcp), pool_, owner);
  c.start_reading();
  ASSERT_EQ(::write(pair.b, "abc", 3), 3);
  close(pair.b);
  pair.b = -1;
  run_until([&] { return !owner.read_errors.empty(); });
  ASSERT_EQ(owner.read_errors.size(), 1u);
  EXPECT_EQ(owner.read_errors[0], UV_EOF);
  EXPECT_EQ(owner.from_turns, (std::vector<uint8_t>{'a', 'b', 'c'}));
  EXPECT_FALSE(c.reading());
  c.close();
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_TRUE(owner.closed);
}

/// A connection on one end of a loopback pair, its peer end in `peer`.
struct TurnFixture {
  TurnFixture(uv_loop_t* loop, BufferPool& pool, TurnOwner& owner) {
    auto tcp = std::make_unique<TcpTransport>(loop);
    EXPECT_EQ(tcp->open(pair.a), 0);
    pair.a = -1;  // the transport owns it now
    c = std::make_unique<Connection>(std::move(tcp), pool, owner);
    c->start_reading();
  }
  LoopbackTcp pair;
  std::unique_ptr<Connection> c;
};

TEST_F(ReadTurn, AReadAfterATurnIsReportedWithItOnceInOrder) {
  TurnOwner owner;
  owner.turns = 1;
  owner.read_after = 500;
  TurnFixture f(&loop_, pool_, owner);
  std::vector<uint8_t> want(60000);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 7 + (i >> 8));
  ASSERT_EQ(::write(f.pair.b, want.data(), want.size()), static_cast<ssize_t>(want.size()));
  run_until([&] { return owner.from_turns.size() + owner.from_input.size() >= want.size(); });
  EXPECT_TRUE(owner.read_errors.empty());
  ASSERT_FALSE(owner.reports.empty());
  // The first report carries the turn's 1,000 bytes and exactly the 500 read after it.
  EXPECT_EQ(owner.reports[0].turned, 1000u);
  EXPECT_EQ(owner.reports[0].input, 500u);
  std::vector<uint8_t> got = owner.from_turns;
  got.insert(got.end(), owner.from_input.begin(), owner.from_input.end());
  EXPECT_TRUE(got == want) << "bytes lost, repeated or reordered";
  EXPECT_EQ(f.c->bytes_read(), want.size());
  EXPECT_TRUE(f.c->reading());
  f.c->close();
  uv_run(&loop_, UV_RUN_DEFAULT);
  EXPECT_TRUE(owner.closed);
}

TEST_F(ReadTurn, AReadAfterATurnThatFindsNothingStillReportsTheTurn) {
  TurnOwner owner;
  owner.turns = 1;
  owner.read_after = 500;
  TurnFixture f(&loop_, pool_, owner);
  ASSERT_EQ(::write(f.pair.b, std::vector<uint8_t>(1000, 'x').data(), 1000), 1000);
  run_until([&] { return !owner.reports.empty(); });
  ASSERT_EQ(owner.reports.size(), 1u);
  EXPECT_EQ(owner.reports[0].turned, 1000u);
  EXPECT_EQ(owner.reports[0].input, 0u);
  EXPECT_TRUE(owner.read_errors.empty());
  EXPECT_TRUE(f.c->reading());
  EXPECT_EQ(f.c->bytes_read(), 1000u);
  // Later bytes are still read.
  ASSERT_EQ(::write(f.pair.b, "yz", 2), 2);
  run_until([&] { return owner.from_input.size() >= 2; });
  EXPECT_EQ(owner.from_input, (std::vector<uint8_t>{'y', 'z'}));
  f.c->close();
  uv_run(&loop_, UV_RUN_DEFAULT);
}

TEST_F(ReadTurn, AReadAfterATurnAtThePeersEndReportsTheBytesThenUvEof) {
  TurnOwner owner;
  owner.turns = 1;
  owner.read_after = 500;
  TurnFixture f(&loop_, pool_, owner);
  ASSERT_EQ(::write(f.pair.b, "abc", 3), 3);
  close(f.pair.b);
  f.pair.b = -1;
  run_until([&] { return !owner.read_errors.empty(); });
  ASSERT_EQ(owner.reports.size(), 1u);
  EXPECT_EQ(owner.from_turns, (std::vector<uint8_t>{'a', 'b', 'c'}));
  ASSERT_EQ(owner.read_errors.size(), 1u);
  EXPECT_EQ(owner.read_errors[0], UV_EOF);
  EXPECT_FALSE(f.c->reading());
  f.c->close();
  uv_run(&loop_, UV_RUN_DEFAULT);
}

TEST_F(ReadTurn, AFirstReadCapHoldsOnlyWhileNoFrameIsInProgress) {
  TurnOwner owner;  // no turns: every byte is read into the input
  TurnFixture f(&loop_, pool_, owner);
  f.c->set_first_read_bytes(700);
  std::vector<uint8_t> want(60000);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 13 + (i >> 10));
  ASSERT_EQ(::write(f.pair.b, want.data(), want.size()), static_cast<ssize_t>(want.size()));
  run_until([&] { return owner.from_input.size() >= 7000; });
  for (const TurnOwner::Report& r : owner.reports) EXPECT_LE(r.input, 700u);
  // A frame in progress reads up to its end, past the cap.
  const size_t seen = owner.reports.size();
  f.c->reserve_input(want.size() - owner.from_input.size(), 64 * 1024);
  run_until([&] { return owner.from_input.size() >= want.size(); });
  size_t largest = 0;
  for (size_t i = seen; i < owner.reports.size(); ++i)
    largest = std::max(largest, owner.reports[i].input);
  EXPECT_GT(largest, 700u);
  EXPECT_TRUE(owner.from_input == want) << "bytes lost, repeated or reordered";
  EXPECT_TRUE(owner.read_errors.empty());
  f.c->close();
  uv_run(&loop_, UV_RUN_DEFAULT);
}

}  // namespace
}  // namespace epochgate::proxy
