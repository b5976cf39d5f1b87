// tests/codec/api_table_test.cc: the API key table (generated from
// codec/schema/api_keys.schema) against facts in docs/architecture.md section 4
// and README.md (union of Kafka 4.x and pre-4.0 versions).
#include <gtest/gtest.h>

#include <string>

#include "codec/api_table.h"
#include "codec/header.h"

namespace epochgate::codec {
namespace {

TEST(ApiTable, EveryKeyFromZeroToNinetyFourIsPresent) {
  for (int16_t k = 0; k <= kMaxApiKey; ++k) {
    const ApiInfo* a = api_info(k);
    ASSERT_NE(a, nullptr) << k;
    EXPECT_EQ(a->key, k);
    EXPECT_NE(std::string(a->name), "");
    EXPECT_LE(a->min_version, a->max_version) << a->name;
  }
  EXPECT_EQ(kMaxApiKey, 94);
  EXPECT_EQ(api_info(-1), nullptr);
  EXPECT_EQ(api_info(95), nullptr);
}

TEST(ApiTable, NamesAndVersionUnions) {
  struct Row {
    int16_t key;
    const char* name;
    int16_t lo, hi, flex;
  };
  // Valid versions: union of message/ and message-pre4.0/ (e.g. Produce 0-2
  // only pre-4.0, 12-13 only 4.x). Flexible thresholds as in Kafka's JSON schemas.
  const Row rows[] = {
      {0, "Produce", 0, 13, 9},        {1, "Fetch", 0, 18, 12},
      {2, "ListOffsets", 0, 11, 6},    {3, "Metadata", 0, 13, 9},
      {4, "LeaderAndIsr", 0, 7, 4},    {10, "FindCoordinator", 0, 6, 3},
      {17, "SaslHandshake", 0, 1, -1}, {18, "ApiVersions", 0, 5, 3},
      {23, "OffsetForLeaderEpoch", 0, 4, 4}, {47, "OffsetDelete", 0, 0, -1},
      {60, "DescribeCluster", 0, 2, 0},      {74, "ListConfigResources", 0, 1, 0},
      {78, "ShareFetch", 0, 2, 0},           {79, "ShareAcknowledge", 0, 2, 0},
      {85, "WriteShareGroupState", 0, 1, 0}, {94, "UnregisterController", 0, 0, 0},
  };
  for (const Row& r : rows) {
    const ApiInfo* a = api_info(r.key);
    ASSERT_NE(a, nullptr);
    EXPECT_STREQ(a->name, r.name);
    EXPECT_EQ(a->min_version, r.lo) << r.name;
    EXPECT_EQ(a->max_version, r.hi) << r.name;
    EXPECT_EQ(a->first_flexible, r.flex) << r.name;
  }
}

TEST(ApiTable, FlexibleThresholds) {
  EXPECT_FALSE(is_flexible(kProduce, 8));
  EXPECT_TRUE(is_flexible(kProduce, 9));
  EXPECT_FALSE(is_flexible(kFetch, 11));
  EXPECT_TRUE(is_flexible(kFetch, 12));
  EXPECT_TRUE(is_flexible(kListOffsets, 6));
  EXPECT_FALSE(is_flexible(kMetadata, 8));
  EXPECT_TRUE(is_flexible(kApiVersions, 3));
  EXPECT_FALSE(is_flexible(kOffsetForLeaderEpoch, 3));
  EXPECT_TRUE(is_flexible(kOffsetForLeaderEpoch, 4));
  EXPECT_TRUE(is_flexible(kDescribeCluster, 0));
  EXPECT_FALSE(is_flexible(kSaslHandshake, 1));
  EXPECT_FALSE(is_flexible(1000, 5));
}

TEST(ApiTable, DecodedFlagMarksExactlyTheFifteenGeneratedApis) {
  const int16_t decoded[] = {kProduce, kFetch, kListOffsets, kMetadata, kFindCoordinator,
                             kApiVersions, kOffsetForLeaderEpoch, kDescribeCluster, kShareFetch,
                             kShareAcknowledge, kInitializeShareGroupState,
                             kReadShareGroupState, kWriteShareGroupState,
                             kDeleteShareGroupState, kReadShareGroupStateSummary};
  int count = 0;
  for (int16_t k = 0; k <= kMaxApiKey; ++k) count += api_info(k)->decoded ? 1 : 0;
  EXPECT_EQ(count, 15);
  for (int16_t k : decoded) EXPECT_TRUE(api_info(k)->decoded) << k;
}

}  // namespace
}  // namespace epochgate::codec
