// tests/proxy/core/in_flight_queue_test.cc: response matching and client order.
#include "proxy/core/in_flight_queue.h"

#include <gtest/gtest.h>

namespace epochgate::proxy {
namespace {

TEST(InFlightQueue, MatchesResponsesInUpstreamOrder) {
  InFlightQueue q;
  auto& a = q.push(1, 3, 12, 0);
  q.mark_forwarded(a, 0);
  auto& b = q.push(2, 0, 9, 0);
  q.mark_forwarded(b, 0);
  InFlightEntry* e = nullptr;
  EXPECT_EQ(q.match_upstream(1, &e), MatchResult::kMatched);
  EXPECT_EQ(e, &a);
  EXPECT_TRUE(q.is_front(a));
  EXPECT_EQ(q.match_upstream(2, &e), MatchResult::kMatched);
  EXPECT_EQ(e, &b);
}

TEST(InFlightQueue, ResponseSkippingAnEarlierRequestIsOutOfOrder) {
  InFlightQueue q;
  q.mark_forwarded(q.push(1, 3, 12, 0), 0);
  q.mark_forwarded(q.push(2, 3, 12, 0), 0);
  InFlightEntry* e = nullptr;
  EXPECT_EQ(q.match_upstream(2, &e), MatchResult::kOutOfOrder);
}

TEST(InFlightQueue, AcksZeroRequestsNeverBlockAndTheirAnswersAreDropped) {
  InFlightQueue q;
  q.forwarded_without_response(1);  // acks=0 produce
  q.mark_forwarded(q.push(2, 18, 3, 0), 0);
  InFlightEntry* e = nullptr;
  // The librdkafka mock answers acks=0: that answer must be dropped.
  EXPECT_EQ(q.match_upstream(1, &e), MatchResult::kNoResponseDue);
  EXPECT_EQ(q.match_upstream(2, &e), MatchResult::kMatched);
  EXPECT_EQ(q.upstream_pending(), 0u);
}

TEST(InFlightQueue, RealBrokerSilenceOnAcksZeroIsSkipped) {
  InFlightQueue q;
  q.forwarded_without_response(1);
  q.forwarded_without_response(2);
  q.mark_forwarded(q.push(3, 18, 3, 0), 0);
  InFlightEntry* e = nullptr;
  EXPECT_EQ(q.match_upstream(3, &e), MatchResult::kMatched);
  EXPECT_EQ(q.upstream_pending(), 0u);
}

TEST(InFlightQueue, UnknownCorrelationIdIsReported) {
  InFlightQueue q;
  InFlightEntry* e = nullptr;
  EXPECT_EQ(q.match_upstream(7, &e), MatchResult::kUnknown);
}

TEST(InFlightQueue, NoResponseSlotsAreBounded) {
  InFlightQueue q;
  for (int i = 0; i < static_cast<int>(InFlightQueue::kMaxNoResponseSlots) + 100; ++i)
    q.forwarded_without_response(i);
  EXPECT_EQ(q.upstream_pending(), InFlightQueue::kMaxNoResponseSlots);
}

TEST(InFlightQueue, LocalAnswersWaitBehindForwardedRequests) {
  InFlightQueue q;
  auto& a = q.push(1, 0, 9, 0);
  q.mark_forwarded(a, 0);
  auto& b = q.push(2, 18, 9, 0);
  b.ready = true;  // answered by epochgate itself
  EXPECT_TRUE(q.is_front(a));
  EXPECT_FALSE(q.is_front(b));
  q.pop_front();
  EXPECT_TRUE(q.is_front(b));
}

}  // namespace
}  // namespace epochgate::proxy
