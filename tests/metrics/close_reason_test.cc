// tests/metrics/close_reason_test.cc: the close reasons' names are the label
// values dashboards match, so they stay unique, snake_case, and the codec's
// failures close with codec::errc_name's own words.
#include "metrics/close_reason.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace epochgate::metrics {
namespace {

TEST(CloseReason, NamesAreUniqueSnakeCaseWords) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < kCloseReasonCount; ++i) {
    const std::string name(close_reason_name(static_cast<CloseReason>(i)));
    EXPECT_FALSE(name.empty());
    EXPECT_EQ(name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"), std::string::npos)
        << name;
    EXPECT_TRUE(seen.insert(name).second) << name << " twice";
  }
}

TEST(CloseReason, CodecFailuresCloseWithTheCodecsName) {
  for (int e = 1; e <= static_cast<int>(codec::Errc::kTooManyPartitions); ++e) {
    const auto errc = static_cast<codec::Errc>(e);
    const CloseReason r = close_reason(errc);
    EXPECT_EQ(close_reason_name(r), codec::errc_name(errc));
    EXPECT_TRUE(is_frame_error(r)) << codec::errc_name(errc);
  }
}

TEST(CloseReason, OnlyFrameErrorsAreSeededInTheFrameErrorFamily) {
  for (std::size_t i = 0; i < kCloseReasonCount; ++i) {
    const auto r = static_cast<CloseReason>(i);
    if (frame_error_seeded(r)) {
      EXPECT_TRUE(is_frame_error(r)) << close_reason_name(r);
    }
  }
  EXPECT_TRUE(is_frame_error(CloseReason::kMaxConnections));
  EXPECT_FALSE(is_frame_error(CloseReason::kIdleTimeout));
  EXPECT_EQ(close_reason_name(CloseReason::kFencedAcks0), "fenced_acks0");
}

}  // namespace
}  // namespace epochgate::metrics
