// tests/proxy/core/in_flight_request_parts_test.cc: a request as the unit of
// work: it waits for every part of its answer (a local part is answered at
// once; upstream parts when their connection answers them), each upstream
// connection keeps its own answer order, and the client order is untouched
// by which part or connection answers first.
#include <gtest/gtest.h>

#include "proxy/core/in_flight_queue.h"

namespace epochgate::proxy {
namespace {

TEST(InFlightRequestParts, LocalPartIsAnsweredAtOnceTheForwardedOneByTheBroker) {
  InFlightQueue q;
  auto& split = q.push(7, 0, 9, 0);
  q.add_local_part(split);
  q.mark_forwarded(split, 5);
  EXPECT_EQ(split.part_count(), 2u);
  EXPECT_EQ(split.outstanding(), 1u);
  EXPECT_TRUE(split.awaiting_upstream);
  InFlightRequest* r = nullptr;
  ASSERT_EQ(q.match_upstream(7, &r), MatchResult::kMatched);
  EXPECT_EQ(r, &split);
  EXPECT_EQ(split.outstanding(), 0u);
  EXPECT_FALSE(split.awaiting_upstream);
}

TEST(InFlightRequestParts, APartOnAnotherUpstreamKeepsTheRequestOutstandingUntilItAnswers) {
  InFlightQueue q;
  uint16_t other = q.add_upstream();
  auto& r = q.push(1, 0, 9, 0);
  q.mark_forwarded(r, 0);
  ASSERT_EQ(q.add_upstream_part(r, other, 9001, 0), 1);
  InFlightRequest* got = nullptr;
  size_t part = 99;
  ASSERT_EQ(q.upstream(other).match(9001, &got, &part), MatchResult::kMatched);
  EXPECT_EQ(got, &r);
  EXPECT_EQ(part, 1u);
  EXPECT_EQ(r.outstanding(), 1u);  // the session's own broker has not answered
  EXPECT_TRUE(r.awaiting_upstream);
  ASSERT_EQ(q.match_upstream(1, &got), MatchResult::kMatched);
  EXPECT_EQ(r.outstanding(), 0u);
  EXPECT_FALSE(r.awaiting_upstream);
}

TEST(InFlightRequestParts, EachUpstreamKeepsItsOwnAnswerOrder) {
  InFlightQueue q;
  uint16_t other = q.add_upstream();
  auto& a = q.push(1, 0, 9, 0);
  q.mark_forwarded(a, 0);
  auto& b = q.push(2, 0, 9, 0);
  q.add_upstream_part(b, other, 2, 0);
  InFlightRequest* got = nullptr;
  size_t part = 0;
  // b's broker answers before a's: in order on its own connection.
  EXPECT_EQ(q.upstream(other).match(2, &got, &part), MatchResult::kMatched);
  EXPECT_EQ(got, &b);
  // The client order still starts with a, which waits for its broker.
  EXPECT_TRUE(q.is_front(a));
  EXPECT_EQ(q.upstream_pending(), 1u);
  ASSERT_EQ(q.match_upstream(1, &got), MatchResult::kMatched);
  EXPECT_EQ(got, &a);
}

TEST(InFlightRequestParts, PartsAreBoundedPerRequest) {
  InFlightQueue q;
  auto& r = q.push(1, 0, 9, 0);
  for (size_t i = 0; i < InFlightRequest::kMaxParts; ++i)
    EXPECT_EQ(q.add_upstream_part(r, 0, static_cast<int32_t>(i), 0), static_cast<int>(i));
  EXPECT_EQ(q.add_upstream_part(r, 0, 99, 0), -1);
  EXPECT_EQ(q.upstream_pending(), InFlightRequest::kMaxParts);
}

}  // namespace
}  // namespace epochgate::proxy
