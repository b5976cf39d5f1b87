// tests/proxy/request_peek_test.cc: Acks from Produce bodies of every layout.
#include "proxy/request_peek.h"

#include <gtest/gtest.h>

#include <vector>

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

}  // namespace
}  // namespace epochgate::proxy
