// tests/proxy/fencing/decision_lease_test.cc: DecisionLease lends one reused
// decision per thread, a fresh one to a nested lease, and gives back room
// above its cap.
#include "proxy/fencing/decision_lease.h"

#include <gtest/gtest.h>

#include <thread>

namespace epochgate::proxy {
namespace {

TEST(DecisionLease, ConsecutiveLeasesOnAThreadReuseOneDecisionAndItsCapacity) {
  policy::RequestDecision* first = nullptr;
  {
    DecisionLease lease;
    first = &lease.get();
    lease.get().partitions.resize(16);
  }
  DecisionLease again;
  EXPECT_EQ(&again.get(), first);
  EXPECT_GE(again.get().partitions.capacity(), 16u);
}

TEST(DecisionLease, NestedLeaseGetsAFreshDecision) {
  DecisionLease outer;
  DecisionLease inner;
  EXPECT_NE(&outer.get(), &inner.get());
}

TEST(DecisionLease, RoomAboveTheCapIsGivenBack) {
  {
    DecisionLease lease;
    lease.get().partitions.resize(DecisionLease::kKeptDecisionEntries + 1);
  }
  DecisionLease again;
  EXPECT_EQ(again.get().partitions.capacity(), 0u);
}

TEST(DecisionLease, EachThreadHasItsOwn) {
  DecisionLease here;
  policy::RequestDecision* there = nullptr;
  std::thread t([&] {
    DecisionLease lease;
    there = &lease.get();
  });
  t.join();
  EXPECT_NE(there, &here.get());
}

}  // namespace
}  // namespace epochgate::proxy
