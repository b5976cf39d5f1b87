// tests/codec/header_test.cc: request headers v0/v1/v2, response headers
// v0/v1, and the choice of header version per API key and version.
#include <gtest/gtest.h>

#include <vector>

#include "codec/api_table.h"
#include "codec/header.h"

namespace epochgate::codec {
namespace {

using Buf = std::vector<uint8_t>;

TEST(RequestHeader, V1HasNullableClientIdAndNoTags) {
  // Metadata v8 (not flexible): header v1.
  Buf b{0, 3, 0, 8, 0, 0, 0, 42, 0, 2, 'c', 'k', 0xaa};
  RequestHeader h;
  ASSERT_TRUE(parse_request_header(b.data(), b.size(), h).ok());
  EXPECT_EQ(h.api_key, 3);
  EXPECT_EQ(h.api_version, 8);
  EXPECT_EQ(h.correlation_id, 42);
  EXPECT_EQ(h.header_version, 1);
  EXPECT_EQ(h.client_id, std::optional<std::string_view>("ck"));
  EXPECT_EQ(h.size, 12u);  // the 0xaa byte is the body
  Buf out;
  write_request_header(out, h);
  EXPECT_EQ(out, Buf(b.begin(), b.end() - 1));
}

TEST(RequestHeader, V2KeepsANonCompactClientIdAndReadsTags) {
  // Metadata v9 (flexible): header v2; client id stays int16-length.
  Buf b{0, 3, 0, 9, 0, 0, 0, 7, 0xff, 0xff, 1, 5, 2, 'h', 'i'};
  RequestHeader h;
  ASSERT_TRUE(parse_request_header(b.data(), b.size(), h).ok());
  EXPECT_EQ(h.header_version, 2);
  EXPECT_FALSE(h.client_id.has_value());
  ASSERT_EQ(h.tagged_fields.size(), 1u);
  EXPECT_EQ(h.tagged_fields[0].tag, 5u);
  EXPECT_EQ(h.tagged_fields[0].data.view(), "hi");
  EXPECT_EQ(h.size, b.size());
  Buf out;
  write_request_header(out, h);
  EXPECT_EQ(out, b);
}

TEST(RequestHeader, ControlledShutdownV0HasNoClientId) {
  Buf b{0, 7, 0, 0, 0, 0, 0, 1, 0, 0, 0, 9};
  RequestHeader h;
  ASSERT_TRUE(parse_request_header(b.data(), b.size(), h).ok());
  EXPECT_EQ(h.header_version, 0);
  EXPECT_EQ(h.size, 8u);
}

TEST(RequestHeader, MalformedHeadersFailCleanly) {
  RequestHeader h;
  Buf short_ids{0, 3, 0, 9, 0};
  EXPECT_EQ(parse_request_header(short_ids.data(), short_ids.size(), h).code, Errc::kTruncated);
  Buf long_client{0, 3, 0, 1, 0, 0, 0, 1, 0, 9, 'x'};
  EXPECT_EQ(parse_request_header(long_client.data(), long_client.size(), h).code,
            Errc::kLengthOverflow);
  Buf neg_client{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xfe};
  EXPECT_EQ(parse_request_header(neg_client.data(), neg_client.size(), h).code,
            Errc::kNegativeLength);
  Buf bad_tags{0, 3, 0, 9, 0, 0, 0, 1, 0xff, 0xff, 2, 3, 0, 1, 0};  // tags 3 then 1
  EXPECT_EQ(parse_request_header(bad_tags.data(), bad_tags.size(), h).code,
            Errc::kBadTaggedFields);
}

TEST(RequestHeader, PeekReadsOnlyTheIds) {
  Buf b{0, 1, 0, 12, 0, 0, 1, 0};
  int16_t k, v;
  int32_t c;
  ASSERT_TRUE(peek_request_ids(b.data(), b.size(), k, v, c));
  EXPECT_EQ(k, 1);
  EXPECT_EQ(v, 12);
  EXPECT_EQ(c, 256);
  EXPECT_FALSE(peek_request_ids(b.data(), 7, k, v, c));
}

TEST(ResponseHeader, V0AndV1) {
  Buf v0{0, 0, 0, 9};
  ResponseHeader h;
  ASSERT_TRUE(parse_response_header(v0.data(), v0.size(), 0, h).ok());
  EXPECT_EQ(h.correlation_id, 9);
  EXPECT_EQ(h.size, 4u);
  Buf v1{0, 0, 0, 9, 0};
  ASSERT_TRUE(parse_response_header(v1.data(), v1.size(), 1, h).ok());
  EXPECT_EQ(h.size, 5u);
  Buf out;
  write_response_header(out, h);
  EXPECT_EQ(out, v1);
  Buf missing_tags{0, 0, 0, 9};
  EXPECT_EQ(parse_response_header(missing_tags.data(), missing_tags.size(), 1, h).code,
            Errc::kTruncated);
}

TEST(HeaderVersion, FollowsFlexibleVersionsExceptApiVersionsResponse) {
  EXPECT_EQ(request_header_version(0, 8), 1);   // Produce v8
  EXPECT_EQ(request_header_version(0, 9), 2);   // Produce v9 flexible
  EXPECT_EQ(response_header_version(0, 8), 0);
  EXPECT_EQ(response_header_version(0, 9), 1);
  EXPECT_EQ(request_header_version(1, 12), 2);  // Fetch v12
  EXPECT_EQ(response_header_version(1, 11), 0);
  // KIP-511: ApiVersions responses use header v0 even when flexible.
  EXPECT_EQ(request_header_version(18, 3), 2);
  for (int16_t v = 0; v <= 5; ++v) EXPECT_EQ(response_header_version(18, v), 0);
  EXPECT_EQ(request_header_version(7, 0), 0);   // ControlledShutdown v0
  EXPECT_EQ(request_header_version(17, 1), 1);  // SaslHandshake never flexible
  EXPECT_EQ(request_header_version(500, 3), 1); // unknown key: v1, not flexible
}

}  // namespace
}  // namespace epochgate::codec
