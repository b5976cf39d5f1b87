// tests/codec/api_version_ranges_test.cc: the version epochgate's own
// requests go at is the highest one inside the broker's ApiVersions range
// (KIP-35), the codec's and the caller's bounds; none when they do not meet.
#include "codec/api_version_ranges.h"

#include <gtest/gtest.h>

namespace epochgate::proxy {
namespace {

TEST(ApiVersionRanges, PicksHighestVersionAllThreeAllow) {
  ApiVersionRanges r;
  r.set(3, 0, 12);  // broker: Metadata v0-12
  EXPECT_EQ(r.pick(3, 0, 13), 12);  // codec goes further: the broker caps
  EXPECT_EQ(r.pick(3, 0, 9), 9);    // caller caps
  EXPECT_EQ(r.pick(3, 12, 12), 12);
}

TEST(ApiVersionRanges, NoCommonVersionIsNone) {
  ApiVersionRanges r;
  r.set(0, 3, 12);                 // Kafka 4: Produce v3+ only (KIP-896)
  EXPECT_EQ(r.pick(0, 0, 2), -1);  // caller wants an old version only
  r.set(3, 0, 4);
  EXPECT_EQ(r.pick(3, 5, 13), -1);  // caller needs v5+
  EXPECT_EQ(r.pick(18, 0, 3), -1);  // not offered at all
  EXPECT_FALSE(r.offers(18));
}

TEST(ApiVersionRanges, HostileEntriesAreIgnored) {
  ApiVersionRanges r;
  r.set(-1, 0, 3);
  r.set(ApiVersionRanges::kMaxKey + 1, 0, 3);
  r.set(3, 5, 2);  // min above max
  EXPECT_FALSE(r.offers(3));
  EXPECT_EQ(r.max(ApiVersionRanges::kMaxKey + 1), -1);
  EXPECT_TRUE(r.max_versions().empty());
}

}  // namespace
}  // namespace epochgate::proxy
