// tests/proxy/fencing/produce_head_lease_test.cc: ProduceHeadLease lends one
// reused Produce head per thread, a fresh one to a nested lease, and gives
// back room above ProduceHead::kKeptEntries.
#include "proxy/fencing/produce_head_lease.h"

#include <gtest/gtest.h>

#include <thread>

namespace epochgate::proxy {
namespace {

TEST(ProduceHeadLease, ConsecutiveLeasesOnAThreadReuseOneHeadAndItsRoom) {
  codec::ProduceHead* first = nullptr;
  {
    ProduceHeadLease lease;
    first = &lease.get();
    lease.get().all_partitions.resize(16);
  }
  ProduceHeadLease again;
  EXPECT_EQ(&again.get(), first);
  EXPECT_GE(again.get().all_partitions.capacity(), 16u);
}

TEST(ProduceHeadLease, NestedLeaseGetsAFreshHead) {
  ProduceHeadLease outer;
  ProduceHeadLease inner;
  EXPECT_NE(&outer.get(), &inner.get());
}

TEST(ProduceHeadLease, RoomAboveTheCapIsGivenBack) {
  {
    ProduceHeadLease lease;
    lease.get().topics.resize(codec::ProduceHead::kKeptEntries + 1);
    lease.get().all_partitions.resize(codec::ProduceHead::kKeptEntries + 1);
  }
  ProduceHeadLease again;
  EXPECT_EQ(again.get().topics.capacity(), 0u);
  EXPECT_EQ(again.get().all_partitions.capacity(), 0u);
}

TEST(ProduceHeadLease, EachThreadHasItsOwn) {
  ProduceHeadLease here;
  codec::ProduceHead* there = nullptr;
  std::thread t([&] {
    ProduceHeadLease lease;
    there = &lease.get();
  });
  t.join();
  EXPECT_NE(there, &here.get());
}

}  // namespace
}  // namespace epochgate::proxy
