// tests/proxy/session/api_versions_filter_test.cc: capping and the UNSUPPORTED_VERSION answer.
#include "proxy/session/api_versions_filter.h"

#include <gtest/gtest.h>

#include "codec/api_table.h"
#include "codec/header.h"
#include "codec/message_io.h"

namespace epochgate::proxy {
namespace {

codec::ApiVersionsResponse::ApiVersion entry(int16_t key, int16_t min, int16_t max) {
  codec::ApiVersionsResponse::ApiVersion v;
  v.api_key = key;
  v.min_version = min;
  v.max_version = max;
  return v;
}

TEST(CapApiVersions, DecodedApisAreCappedAtTheCodecMax) {
  codec::ApiVersionsResponse r;
  int16_t ours = codec::api_info(codec::kMetadata)->max_version;
  r.api_keys = {entry(codec::kMetadata, 0, ours + 5), entry(codec::kFetch, 4, 12)};
  EXPECT_EQ(cap_api_versions(r, false), 1);
  EXPECT_EQ(r.api_keys[0].max_version, ours);
  EXPECT_EQ(r.api_keys[1].max_version, 12);
}

TEST(CapApiVersions, UndecodedApisPassUnchanged) {
  codec::ApiVersionsResponse r;
  r.api_keys = {entry(32, 0, 99)};  // DescribeConfigs: not decoded
  EXPECT_EQ(cap_api_versions(r, false), 0);
  EXPECT_EQ(r.api_keys[0].max_version, 99);
}

TEST(CapApiVersions, Kip951BridgeOffersProduce10AndFetch16OverOlderBrokers) {
  codec::ApiVersionsResponse r;
  r.api_keys = {entry(codec::kProduce, 0, 9), entry(codec::kFetch, 0, 15)};
  EXPECT_EQ(cap_api_versions(r, true), 2);
  EXPECT_EQ(r.api_keys[0].max_version, 10);
  EXPECT_EQ(r.api_keys[1].max_version, 16);
}

TEST(UnsupportedApiVersions, AnswersV0WithOurRange) {
  std::vector<uint8_t> f = unsupported_api_versions_response(42);
  codec::ResponseHeader h;
  ASSERT_TRUE(codec::parse_response_header(f.data() + 4, f.size() - 4, 0, h).ok());
  EXPECT_EQ(h.correlation_id, 42);
  codec::ApiVersionsResponse r;
  ASSERT_TRUE(codec::decode_body(f.data() + 4 + h.size, f.size() - 4 - h.size, 0, r).ok());
  EXPECT_EQ(r.error_code, 35);
  ASSERT_EQ(r.api_keys.size(), 1u);
  EXPECT_EQ(r.api_keys[0].api_key, codec::kApiVersions);
  EXPECT_EQ(r.api_keys[0].max_version, codec::api_info(codec::kApiVersions)->max_version);
}

}  // namespace
}  // namespace epochgate::proxy
