// tests/codec/request_peek_test.cc: Acks from Produce bodies of every layout;
// the wait a Produce or Fetch grants its broker, against the codec's encoder.
#include "codec/request_peek.h"

#include <gtest/gtest.h>

#include <vector>

#include "codec/header.h"
#include "codec/messages/fetch_request.h"
#include "codec/messages/produce_request.h"
#include "codec/writer.h"

namespace epochgate::proxy {
namespace {

TEST(ProduceAcks, Version2StartsWithAcks) {
  std::vector<uint8_t> b;
  codec::Writer w(b);
  w.int16(0);
  w.int32(1000);
  EXPECT_EQ(produce_acks(b.data(), b.size(), 2), 0);
}

TEST(ProduceAcks, Version3SkipsTransactionalId) {
  std::vector<uint8_t> b;
  codec::Writer w(b);
  w.nullable_string(std::string("txn-1"), false);
  w.int16(-1);
  EXPECT_EQ(produce_acks(b.data(), b.size(), 3), -1);
}

TEST(ProduceAcks, FlexibleVersionUsesCompactNullString) {
  std::vector<uint8_t> b;
  codec::Writer w(b);
  w.nullable_string(std::nullopt, true);
  w.int16(1);
  EXPECT_EQ(produce_acks(b.data(), b.size(), 9), 1);
}

TEST(ProduceAcks, TruncatedBodyGivesNothing) {
  std::vector<uint8_t> b{0x00, 0x05, 'a'};
  EXPECT_FALSE(produce_acks(b.data(), b.size(), 3).has_value());
}

template <typename M>
std::vector<uint8_t> body_of(const M& m, int16_t version) {
  std::vector<uint8_t> b;
  codec::Writer w(b);
  m.encode(w, version);
  return b;
}

TEST(RequestOwnWait, ProduceTimeoutInEveryLayout) {
  codec::ProduceRequest m;
  m.transactional_id = std::string("txn");
  m.acks = -1;
  m.timeout_ms = 12345;
  for (int16_t v : {3, 8, 9, 10}) {
    auto b = body_of(m, v);
    EXPECT_EQ(request_own_wait_ms(codec::kProduce, b.data(), b.size(), v), 12345) << "v" << v;
  }
}

TEST(RequestOwnWait, FetchMaxWaitBeforeAndAfterReplicaIdLeftTheBody) {
  codec::FetchRequest m;
  m.replica_id = -1;
  m.max_wait_ms = 777;
  m.min_bytes = 1;
  for (int16_t v : {4, 12, 14, 15, 17}) {
    auto b = body_of(m, v);
    EXPECT_EQ(request_own_wait_ms(codec::kFetch, b.data(), b.size(), v), 777) << "v" << v;
  }
}

TEST(RequestOwnWait, OtherApisGrantNoWaitAndShortBodiesNothing) {
  std::vector<uint8_t> b{0x00, 0x01};
  EXPECT_EQ(request_own_wait_ms(codec::kMetadata, b.data(), b.size(), 12), 0);
  EXPECT_FALSE(request_own_wait_ms(codec::kFetch, b.data(), b.size(), 15).has_value());
}

}  // namespace
}  // namespace epochgate::proxy
