// tests/proxy/net/connection_pacing_test.cc: ReadPacer over a real
// TcpTransport on loopback. A connection that read a turn's worth
// (ReadPacer::kBytesPerTurn) yields the loop; on a plain socket it does so
// by taking no room until the check phase, keeping its read started (no
// stop and start, which cost libuv two epoll_ctl calls): every byte still
// comes once and in order, the connection still reads, and a second
// connection on the same loop is served while the first has bytes waiting.
// A read its owner stops while the pacer holds it (flow control) stays
// stopped through the check phase until the owner starts it; one stopped
// and started again goes on. A transport without splice_fd() (TLS) still
// yields by stopping its read, started again in the check phase. Bytes the
// owner moves itself (a splice, take_read_turn()) weigh a quarter of copied
// ones: a turn is ReadPacer::kSplicedBytesPerTurn of them.
#include "proxy/net/connection.h"
#include "proxy/net/read_pacer.h"
#include "proxy/net/tcp_transport.h"
#include "tests/proxy/fake_transport.h"
#include "tests/proxy/net/loopback_tcp.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace epochgate::proxy {
namespace {

struct Sink : ConnectionOwner {
  void on_readable(Connection& c) override {
    ByteBuffer& in = c.input();
    got.insert(got.end(), in.begin(), in.begin() + in.size());
    in.consume(in.size());
    if (other != nullptr && other_got_at < 0 && !other->empty()) other_got_at = static_cast<long>(got.size());
  }
  void on_read_error(Connection&, int status) override { read_errors.push_back(status); }
  void on_drained(Connection&) override {}
  void on_write_error(Connection&, int) override {}
  void on_closed(Connection&) override {}
  std::vector<uint8_t> got;
  std::vector<int> read_errors;
  const std::vector<uint8_t>* other = nullptr;  // the other connection's bytes
  long other_got_at = -1;  // our bytes when the other's first showed
};

/// A Connection on one end of a loopback pair, paced.
struct Paced {
  Paced(uv_loop_t* loop, BufferPool& pool, ReadPacer& pacer, Sink& sink) {
    auto tcp = std::make_unique<TcpTransport>(loop);
    EXPECT_EQ(tcp->open(pair.a), 0);
    pair.a = -1;  // the transport owns it now
    c = std::make_unique<Connection>(std::move(tcp), pool, sink);
    c->set_pacer(&pacer);
    c->start_reading();
    fcntl(pair.b, F_SETFL, O_NONBLOCK);
  }
  /// Writes what the peer's socket takes of `data` from `at`.
  void pump(const std::vector<uint8_t>& data, size_t& at) {
    while (at < data.size()) {
      ssize_t n = ::write(pair.b, data.data() + at, data.size() - at);
      if (n <= 0) return;
      at += static_cast<size_t>(n);
    }
  }
  LoopbackTcp pair;
  std::unique_ptr<Connection> c;
};

TEST(ConnectionPacing, APacedSocketYieldsWithoutStoppingItsReadAndLosesNothing) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  BufferPool pool(64 * 1024, 8);
  ReadPacer pacer(&loop);
  Sink big_sink, small_sink;
  big_sink.other = &small_sink.got;
  {
    Paced big(&loop, pool, pacer, big_sink);
    Paced small(&loop, pool, pacer, small_sink);
    std::vector<uint8_t> want(5 * ReadPacer::kBytesPerTurn);
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 7 + (i >> 12));
    size_t at = 0;
    big.pump(want, at);
    const std::vector<uint8_t> hello = {'h', 'i'};
    size_t hello_at = 0;
    small.pump(hello, hello_at);
    for (int i = 0; i < 200000 && big_sink.got.size() < want.size(); ++i) {
      big.pump(want, at);
      uv_run(&loop, UV_RUN_NOWAIT);
      EXPECT_TRUE(big.c->reading());
    }
    EXPECT_TRUE(big_sink.got == want) << "bytes lost, repeated or reordered";
    EXPECT_TRUE(big_sink.read_errors.empty());
    EXPECT_GE(pacer.yields(), 4u);
    EXPECT_EQ(small_sink.got, hello);
    // Served while the big one still had most of its bytes to come.
    EXPECT_GE(big_sink.other_got_at, 0);
    EXPECT_LT(static_cast<size_t>(big_sink.other_got_at), want.size());
    big.c->close();
    small.c->close();
    pacer.close();
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

/// Stops its connection's read from on_readable once a turn's worth came
/// (what FlowControl does while the broker's queue is written): the stop
/// lands while the pacer holds the connection.
struct StoppingSink : Sink {
  void on_readable(Connection& c) override {
    Sink::on_readable(c);
    if (!stopped && got.size() >= ReadPacer::kBytesPerTurn) {
      stopped = true;
      c.stop_reading();
      if (restart_at_once) c.start_reading();
    }
  }
  bool stopped = false;
  bool restart_at_once = false;
};

TEST(ConnectionPacing, AReadStoppedWhileYieldingStaysStoppedUntilItsOwnerStartsIt) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  BufferPool pool(64 * 1024, 8);
  ReadPacer pacer(&loop);
  StoppingSink sink;
  {
    Paced p(&loop, pool, pacer, sink);
    std::vector<uint8_t> want(3 * ReadPacer::kBytesPerTurn);
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 13 + (i >> 10));
    size_t at = 0;
    for (int i = 0; i < 20000 && !sink.stopped; ++i) {
      p.pump(want, at);
      uv_run(&loop, UV_RUN_NOWAIT);
    }
    ASSERT_TRUE(sink.stopped);
    const size_t held = sink.got.size();
    // Loop turns (their check phases included) with bytes waiting in the
    // socket: the pacer must not start a read its owner stopped.
    for (int i = 0; i < 50; ++i) {
      p.pump(want, at);
      uv_run(&loop, UV_RUN_NOWAIT);
    }
    EXPECT_FALSE(p.c->reading());
    EXPECT_EQ(sink.got.size(), held);
    p.c->start_reading();
    for (int i = 0; i < 200000 && sink.got.size() < want.size(); ++i) {
      p.pump(want, at);
      uv_run(&loop, UV_RUN_NOWAIT);
    }
    EXPECT_TRUE(sink.got == want) << "bytes lost, repeated or reordered";
    EXPECT_TRUE(sink.read_errors.empty());
    p.c->close();
    pacer.close();
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(ConnectionPacing, AReadStoppedAndStartedWhileYieldingGoesOnAfterTheTurn) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  BufferPool pool(64 * 1024, 8);
  ReadPacer pacer(&loop);
  StoppingSink sink;
  sink.restart_at_once = true;
  {
    Paced p(&loop, pool, pacer, sink);
    std::vector<uint8_t> want(3 * ReadPacer::kBytesPerTurn);
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 11 + (i >> 9));
    size_t at = 0;
    for (int i = 0; i < 200000 && sink.got.size() < want.size(); ++i) {
      p.pump(want, at);
      uv_run(&loop, UV_RUN_NOWAIT);
    }
    EXPECT_TRUE(sink.stopped);
    EXPECT_TRUE(sink.got == want) << "bytes lost, repeated or reordered";
    EXPECT_TRUE(p.c->reading());
    p.c->close();
    pacer.close();
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(ConnectionPacing, ATransportWithoutASocketToSpliceStopsItsReadAndIsStartedAtTheCheck) {
  // TLS: no splice_fd(), so no turns taken at the socket: the yield is a
  // stop, and the pacer starts the read again in the loop's check phase.
  uv_loop_t loop;
  uv_loop_init(&loop);
  BufferPool pool(64 * 1024, 8);
  ReadPacer pacer(&loop);
  Sink sink;
  uv_timer_t alive;  // the in-memory transport has no handle to keep the loop running
  uv_timer_init(&loop, &alive);
  uv_timer_start(&alive, [](uv_timer_t*) {}, 60000, 0);
  {
    auto owned = std::make_unique<testing::FakeTransport>();
    testing::FakeTransport* t = owned.get();
    Connection c(std::move(owned), pool, sink);
    c.set_pacer(&pacer);
    c.start_reading();
    std::string want(3 * ReadPacer::kBytesPerTurn, '\0');
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<char>(i * 5 + (i >> 11));
    t->peer_sends(want);
    t->pump();
    EXPECT_GE(sink.got.size(), ReadPacer::kBytesPerTurn);
    EXPECT_LT(sink.got.size(), want.size());
    EXPECT_FALSE(t->reading()) << "a yield on a transport without splice_fd() stops its read";
    EXPECT_TRUE(c.reading()) << "held by the pacer, not by its owner";
    for (int i = 0; i < 100 && sink.got.size() < want.size(); ++i) {
      uv_run(&loop, UV_RUN_NOWAIT);  // the check phase starts the read again
      EXPECT_TRUE(t->reading());
      t->pump();
    }
    EXPECT_EQ(std::string(sink.got.begin(), sink.got.end()), want);
    EXPECT_GE(pacer.yields(), 2u);
    c.close();
    t->pump();
    pacer.close();
    uv_close(reinterpret_cast<uv_handle_t*>(&alive), nullptr);
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

/// Takes every read as a turn at the socket, as a splice does: reads up to
/// 64 KiB straight from it and gives the connection no room.
struct TurnSink : Sink {
  ssize_t take_read_turn(Connection& c) override {
    std::vector<uint8_t> buf(64 * 1024);
    const ssize_t n = ::read(c.splice_fd(), buf.data(), buf.size());
    if (n > 0) {
      got.insert(got.end(), buf.begin(), buf.begin() + n);
      return n;
    }
    if (n == 0) return UV_EOF;
    return errno == EAGAIN ? UV_EAGAIN : -errno;
  }
};

TEST(ConnectionPacing, SplicedBytesWeighAQuarterOfCopiedOnesInATurn) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  BufferPool pool(64 * 1024, 8);
  ReadPacer pacer(&loop);
  TurnSink sink;
  {
    Paced moved(&loop, pool, pacer, sink);
    static_assert(ReadPacer::kSplicedBytesPerTurn == 4 * ReadPacer::kBytesPerTurn);
    std::vector<uint8_t> want(9 * ReadPacer::kBytesPerTurn);
    for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<uint8_t>(i * 3 + (i >> 13));
    // Three copied turns' worth, moved: under one spliced turn, no yield.
    const size_t first = 3 * ReadPacer::kBytesPerTurn;
    std::vector<uint8_t> part(want.begin(), want.begin() + first);
    size_t at = 0;
    for (int i = 0; i < 200000 && sink.got.size() < first; ++i) {
      moved.pump(part, at);
      uv_run(&loop, UV_RUN_NOWAIT);
    }
    EXPECT_EQ(sink.got.size(), first);
    EXPECT_EQ(pacer.yields(), 0u) << "moved bytes counted as copied ones";
    // Six more: 9 MiB moved is two whole spliced turns and a quarter.
    for (int i = 0; i < 200000 && sink.got.size() < want.size(); ++i) {
      moved.pump(want, at);
      uv_run(&loop, UV_RUN_NOWAIT);
    }
    EXPECT_TRUE(sink.got == want) << "bytes lost, repeated or reordered";
    EXPECT_EQ(pacer.yields(), 2u);
    EXPECT_TRUE(sink.read_errors.empty());
    moved.c->close();
    pacer.close();
    uv_run(&loop, UV_RUN_DEFAULT);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

}  // namespace
}  // namespace epochgate::proxy
