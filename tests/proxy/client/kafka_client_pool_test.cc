// KafkaClientPool: one client per broker node, bounded by max_nodes; a node
// that moved gets a new client and the old one's requests fail; a node the
// cluster dropped is closed. No request here ever reaches a socket: each
// is failed before the loop would start its dial.
#include "proxy/client/kafka_client_pool.h"

#include <uv.h>

#include <gtest/gtest.h>

#include <vector>

#include "codec/messages/produce_request.h"

namespace epochgate::proxy {
namespace {

class KafkaClientPoolTest : public ::testing::Test {
 protected:
  KafkaClientPoolTest() { uv_loop_init(&loop_); }
  ~KafkaClientPoolTest() override {
    if (!close_called_) close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_TRUE(closed_);
    pool_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }
  KafkaClientPool& pool(size_t max_nodes = 4) {
    if (!pool_)
      pool_ = std::make_unique<KafkaClientPool>(&loop_, buffers_, KafkaClientOptions{}, max_nodes);
    return *pool_;
  }
  void close() {
    close_called_ = true;
    pool().close([this] { closed_ = true; });
  }
  /// Sends a Produce on `c`; its outcome goes to `errors`.
  ClientError send(BrokerClient& c) {
    return c.send(codec::ProduceRequest{}, SendOptions{},
                  [this](ClientResult<codec::ProduceResponse>&& r) { errors.push_back(r.error); });
  }
  std::vector<ClientError> errors;

 private:
  uv_loop_t loop_;
  BufferPool buffers_{64 * 1024, 8};
  std::unique_ptr<KafkaClientPool> pool_;
  bool close_called_ = false;
  bool closed_ = false;
};

const config::HostPort kA{"127.0.0.1", 19092};
const config::HostPort kB{"127.0.0.1", 19093};

TEST_F(KafkaClientPoolTest, SameNodeAtTheSameAddressIsOneClient) {
  KafkaClient* a = pool().client(1, kA);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(pool().client(1, kA), a);
  EXPECT_NE(pool().client(2, kA), a) << "one client per node, not per address";
  EXPECT_EQ(pool().size(), 2u);
}

TEST_F(KafkaClientPoolTest, BoundedByMaxNodes) {
  ASSERT_NE(pool(2).client(1, kA), nullptr);
  ASSERT_NE(pool().client(2, kA), nullptr);
  EXPECT_EQ(pool().client(3, kA), nullptr) << "a third node falls back instead of growing";
  EXPECT_EQ(pool().size(), 2u);
  pool().forget(1);
  EXPECT_NE(pool().client(3, kA), nullptr) << "a forgotten node frees its room";
}

TEST_F(KafkaClientPoolTest, NodeThatMovedGetsANewClientAndTheOldOnesRequestsFail) {
  KafkaClient* old = pool().client(1, kA);
  ASSERT_EQ(send(*old), ClientError::kNone);
  KafkaClient* moved = pool().client(1, kB);
  ASSERT_NE(moved, nullptr);
  EXPECT_EQ(errors, std::vector<ClientError>{ClientError::kDisconnected});
  EXPECT_EQ(pool().size(), 1u);
}

TEST_F(KafkaClientPoolTest, ForgottenNodesClientFailsItsRequestsAsClosed) {
  KafkaClient* c = pool().client(1, kA);
  ASSERT_EQ(send(*c), ClientError::kNone);
  pool().forget(1);
  EXPECT_EQ(errors, std::vector<ClientError>{ClientError::kClosed});
  EXPECT_EQ(pool().size(), 0u);
  pool().forget(7);  // unknown: no-op
}

TEST_F(KafkaClientPoolTest, ClosedPoolMakesNoClients) {
  KafkaClient* c = pool().client(1, kA);
  ASSERT_EQ(send(*c), ClientError::kNone);
  close();
  EXPECT_EQ(errors, std::vector<ClientError>{ClientError::kClosed});
  EXPECT_EQ(pool().client(2, kA), nullptr);
}

}  // namespace
}  // namespace epochgate::proxy
