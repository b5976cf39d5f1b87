// tests/codec/metadata_brokers_test.cc: the Brokers array of a
// MetadataResponse body delimited as bytes, in every version: the bytes
// before it, a re-encoded array and the bytes after it make the body again,
// byte for byte; with other brokers in the array, the result decodes to the
// same response with only its brokers changed; a body cut short inside the
// array is an error, never a span past the end.
#include "codec/metadata_brokers.h"

#include <gtest/gtest.h>

#include <vector>

#include "codec/message_io.h"
#include "codec/messages/all.h"
#include "codec/messages/test_samples.h"

namespace epochgate::codec {
namespace {

std::vector<uint8_t> body_of(const MetadataResponse& m, int16_t v) {
  std::vector<uint8_t> out;
  Writer w(out);
  m.encode(w, v);
  return out;
}

// The body with its bytes [begin, end) replaced by `brokers` encoded at `v`.
std::vector<uint8_t> with_brokers(const std::vector<uint8_t>& body, size_t begin, size_t end,
                                  const std::vector<MetadataResponse::MetadataResponseBroker>& brokers,
                                  int16_t v) {
  std::vector<uint8_t> out(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(begin));
  encode_metadata_brokers(brokers, v, out);
  out.insert(out.end(), body.begin() + static_cast<std::ptrdiff_t>(end), body.end());
  return out;
}

// Each test starts from the sample response at the version under test, its
// body and the span its Brokers array takes in that body.
class MetadataBrokersSpan : public ::testing::TestWithParam<int16_t> {
 protected:
  void SetUp() override {
    testing::fill_sample(m, v);
    body = body_of(m, v);
    ASSERT_TRUE(metadata_brokers_span(body.data(), body.size(), v, &begin, &end).ok());
  }
  const int16_t v = GetParam();
  MetadataResponse m;
  std::vector<uint8_t> body;
  size_t begin = 0, end = 0;
};

TEST_P(MetadataBrokersSpan, ReEncodedBrokersBetweenTheOriginalBytesMakeTheSameBody) {
  ASSERT_FALSE(m.brokers.empty());
  EXPECT_EQ(begin, v >= 3 ? 4u : 0u) << "right after ThrottleTimeMs";
  ASSERT_LT(begin, end);
  ASSERT_LE(end, body.size());
  EXPECT_EQ(with_brokers(body, begin, end, m.brokers, v), body);
}

TEST_P(MetadataBrokersSpan, OtherBrokersChangeOnlyTheBrokers) {
  MetadataResponse want = m;
  want.brokers[0].host = "epochgate.example.internal";
  want.brokers[0].port = 19001;
  want.brokers.push_back(want.brokers[0]);
  want.brokers.back().node_id = 7;
  const std::vector<uint8_t> spliced = with_brokers(body, begin, end, want.brokers, v);
  MetadataResponse got;
  ASSERT_TRUE(decode_body(spliced.data(), spliced.size(), v, got).ok());
  EXPECT_EQ(got, want);
}

TEST_P(MetadataBrokersSpan, ABodyCutInsideTheBrokersIsAnError) {
  for (size_t cut = 0; cut < end; ++cut) {
    size_t b = 0, e = 0;
    EXPECT_FALSE(metadata_brokers_span(body.data(), cut, v, &b, &e).ok()) << "cut at " << cut;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryVersion, MetadataBrokersSpan,
                         ::testing::Range<int16_t>(MetadataResponse::kMinVersion,
                                                   MetadataResponse::kMaxVersion + 1));

}  // namespace
}  // namespace epochgate::codec
