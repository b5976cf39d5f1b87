// tests/proxy/net/connection_transport_test.cc: what Connection promises any
// Transport under it (proxy/net/transport.h), driven through the in-memory fake:
// output waits while a handshake runs and leaves in order once it is done, a
// failed handshake is a read error, a transport that does not write in place
// never gets the caller's frame handed through, and reads land in input().
#include "proxy/net/connection.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tests/proxy/fake_transport.h"

namespace epochgate::proxy {
namespace {

using testing::FakeTransport;

struct Owner : ConnectionOwner {
  void on_readable(Connection& c) override {
    got.append(reinterpret_cast<const char*>(c.input().begin()), c.input().size());
    c.input().consume(c.input().size());
  }
  void on_read_error(Connection&, int status) override { read_error = status; }
  void on_drained(Connection&) override { ++drained; }
  void on_write_error(Connection&, int status) override { write_error = status; }
  void on_closed(Connection&) override { closed = true; }
  std::string got;
  int read_error = 0, write_error = 0, drained = 0;
  bool closed = false;
};

struct Rig {
  explicit Rig(bool handshake, bool in_place = true) {
    auto t = std::make_unique<FakeTransport>(handshake, in_place);
    fake = t.get();
    conn = std::make_unique<Connection>(std::move(t), pool, owner);
  }
  ~Rig() {
    conn->close();
    fake->pump();  // on_closed; the transport is gone with conn below
  }
  BufferPool pool;
  Owner owner;
  FakeTransport* fake;
  std::unique_ptr<Connection> conn;
};

TEST(ConnectionOverTransport, OutputWaitsForTheHandshakeThenLeavesInOrder) {
  Rig r(/*handshake=*/true);
  r.conn->start_reading();
  r.conn->queue("ApiVersions;", 12);
  r.conn->flush();
  std::string big(Connection::kWriteThroughBytes * 2, 'B');
  r.conn->write_through(reinterpret_cast<const uint8_t*>(big.data()), big.size());
  r.conn->flush();
  r.fake->pump();
  EXPECT_EQ(r.fake->sent(), "");  // nothing before the handshake finished
  EXPECT_EQ(r.fake->try_writes() + r.fake->writes(), 0);
  EXPECT_EQ(r.conn->queued_bytes(), 12 + big.size());
  r.fake->finish_handshake(0);
  r.fake->pump();
  EXPECT_EQ(r.fake->sent(), "ApiVersions;" + big);
  EXPECT_EQ(r.conn->queued_bytes(), 0u);
}

TEST(ConnectionOverTransport, ReadsWaitForTheHandshake) {
  Rig r(/*handshake=*/true);
  r.conn->start_reading();
  r.fake->peer_sends("early");
  r.fake->pump();
  EXPECT_EQ(r.owner.got, "");
  r.fake->finish_handshake(0);
  r.fake->pump();
  EXPECT_EQ(r.owner.got, "early");
}

TEST(ConnectionOverTransport, FailedHandshakeIsAReadError) {
  Rig r(/*handshake=*/true);
  r.conn->start_reading();
  r.conn->queue("x", 1);
  r.fake->finish_handshake(UV_EPROTO);
  EXPECT_EQ(r.owner.read_error, UV_EPROTO);
  EXPECT_FALSE(r.conn->reading());
  r.conn->flush();
  EXPECT_EQ(r.fake->sent(), "");
}

TEST(ConnectionOverTransport, TransformingTransportGetsTheFrameFromTheQueue) {
  Rig r(/*handshake=*/false, /*in_place=*/false);
  std::string big(Connection::kWriteThroughBytes * 2, 'T');
  r.conn->write_through(reinterpret_cast<const uint8_t*>(big.data()), big.size());
  EXPECT_EQ(r.fake->try_writes(), 0);  // copied, not handed through
  big.assign(big.size(), 'X');         // the caller reuses its buffer at once
  r.conn->flush();
  r.fake->pump();
  EXPECT_EQ(r.fake->sent(), std::string(big.size(), 'T'));
}

TEST(ConnectionOverTransport, InPlaceTransportTakesALargeFrameDirectly) {
  Rig r(/*handshake=*/false);
  std::string big(Connection::kWriteThroughBytes * 2, 'P');
  r.conn->write_through(reinterpret_cast<const uint8_t*>(big.data()), big.size());
  EXPECT_EQ(r.fake->try_writes(), 1);
  EXPECT_EQ(r.fake->sent(), big);
  EXPECT_EQ(r.conn->queued_bytes(), 0u);
}

TEST(ConnectionOverTransport, WhatTryWriteLeavesGoesOutByWriteAndDrains) {
  Rig r(/*handshake=*/false);
  r.conn->set_watermarks(10, 100);
  r.fake->set_try_write_limit(50);
  r.fake->set_auto_complete(false);
  std::string frame(300, 'w');
  r.conn->queue(frame.data(), frame.size());
  EXPECT_TRUE(r.conn->above_high_watermark());
  r.conn->flush();
  EXPECT_EQ(r.fake->sent(), frame.substr(0, 50));
  EXPECT_TRUE(r.fake->write_in_flight());
  EXPECT_EQ(r.owner.drained, 0);
  r.fake->complete_write(0);
  EXPECT_EQ(r.fake->sent(), frame);
  EXPECT_EQ(r.owner.drained, 1);
  EXPECT_EQ(r.conn->bytes_written(), frame.size());
}

TEST(ConnectionOverTransport, PeerCloseAfterItsBytes) {
  Rig r(/*handshake=*/false);
  r.conn->start_reading();
  r.fake->peer_sends("last words");
  r.fake->peer_closes();
  r.fake->pump();
  EXPECT_EQ(r.owner.got, "last words");
  EXPECT_EQ(r.owner.read_error, UV_EOF);
  EXPECT_TRUE(r.conn->peer_closed());
}

}  // namespace
}  // namespace epochgate::proxy
