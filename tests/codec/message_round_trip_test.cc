// tests/codec/message_round_trip_test.cc: for every generated message, every
// version, request and response: the sample encodes, decodes back to an equal
// value and re-encodes byte for byte; every strict prefix fails cleanly; the
// frame survives FrameSplitter one byte at a time; garbage after the body is
// reported as trailing bytes; corrupted bodies fail cleanly or decode.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "codec/frame_splitter.h"
#include "codec/header.h"
#include "codec/messages/all.h"
#include "codec/messages/test_samples.h"

namespace epochgate::codec {
namespace {

struct Case {
  std::string name;
  int16_t version;
  void (*run)(int16_t);
};

// Short names in test listings (ctest shows the printed parameter).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " v" << c.version; }

template <class M>
std::vector<uint8_t> encode_body(const M& m, int16_t v) {
  std::vector<uint8_t> out;
  Writer w(out);
  m.encode(w, v);
  return out;
}

template <class M>
void run_case(int16_t v) {
  M sample;
  testing::fill_sample(sample, v);
  const std::vector<uint8_t> bytes = encode_body(sample, v);

  // encode -> decode -> equal -> encode byte-identical.
  M decoded;
  Status s = decode_body(bytes.data(), bytes.size(), v, decoded);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(decoded == sample);
  EXPECT_EQ(encode_body(decoded, v), bytes);

  // Every strict prefix fails with an error, never a crash.
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    M d;
    Status ps = decode_body(prefix.data(), prefix.size(), v, d);
    ASSERT_FALSE(ps.ok()) << "prefix of " << n << " of " << bytes.size() << " bytes decoded";
  }

  // Deterministic random corruption: one to three bytes changed. Each decode
  // returns ok or an error; whatever decoded re-encodes without trouble.
  uint32_t rng = 0x9e3779b9u ^ static_cast<uint32_t>(v * 7919 + M::kApiKey);
  auto next = [&rng]() {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
  };
  for (int i = 0; i < 200 && !bytes.empty(); ++i) {
    std::vector<uint8_t> bad = bytes;
    int flips = 1 + static_cast<int>(next() % 3);
    for (int f = 0; f < flips; ++f) bad[next() % bad.size()] = static_cast<uint8_t>(next());
    M d;
    if (decode_body(bad.data(), bad.size(), v, d).ok()) (void)encode_body(d, v);
  }

  // Garbage after the body.
  std::vector<uint8_t> tail = bytes;
  tail.push_back(0x5a);
  tail.push_back(0x00);
  M d2;
  Status ts = decode_body(tail.data(), tail.size(), v, d2);
  EXPECT_EQ(ts.code, Errc::kTrailingBytes) << ts.message();
  EXPECT_EQ(ts.offset, bytes.size());

  // A whole frame (size + header + body) fed one byte at a time.
  std::vector<uint8_t> frame;
  if constexpr (M::kIsRequest) {
    RequestHeader h;
    h.api_key = M::kApiKey;
    h.api_version = v;
    h.correlation_id = 0x01020304;
    h.client_id = "round-trip";
    encode_frame(frame, h, sample, v);
  } else {
    ResponseHeader h;
    h.correlation_id = 0x01020304;
    encode_frame(frame, h, sample, v);
  }
  FrameSplitter fs;
  size_t fed = 0;
  while (fed < frame.size() && !fs.ready()) {
    size_t used = fs.feed(frame.data() + fed, 1);
    ASSERT_FALSE(fs.failed());
    fed += used;
  }
  ASSERT_TRUE(fs.ready());
  ASSERT_EQ(fed, frame.size());
  const std::vector<uint8_t>& payload = fs.frame();
  size_t header_size = 0;
  if constexpr (M::kIsRequest) {
    RequestHeader h;
    ASSERT_TRUE(parse_request_header(payload.data(), payload.size(), h).ok());
    EXPECT_EQ(h.api_key, M::kApiKey);
    EXPECT_EQ(h.api_version, v);
    EXPECT_EQ(h.correlation_id, 0x01020304);
    header_size = h.size;
  } else {
    ResponseHeader h;
    ASSERT_TRUE(parse_response_header(payload.data(), payload.size(),
                                      response_header_version(M::kApiKey, v), h)
                    .ok());
    EXPECT_EQ(h.correlation_id, 0x01020304);
    header_size = h.size;
  }
  M from_frame;
  Status fsd = decode_body(payload.data() + header_size, payload.size() - header_size, v,
                           from_frame);
  ASSERT_TRUE(fsd.ok()) << fsd.message();
  EXPECT_TRUE(from_frame == sample);
}

template <class M>
void add_cases(std::vector<Case>& out) {
  for (int16_t v = M::kMinVersion; v <= M::kMaxVersion; ++v)
    out.push_back(Case{M::kName, v, &run_case<M>});
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  std::apply([&](auto... m) { (add_cases<decltype(m)>(out), ...); }, AllMessages{});
  return out;
}

class MessageRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(MessageRoundTrip, EncodeDecodeEncodeIsByteIdentical) { GetParam().run(GetParam().version); }

INSTANTIATE_TEST_SUITE_P(AllApis, MessageRoundTrip, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return i.param.name + "_v" + std::to_string(i.param.version);
                         });

}  // namespace
}  // namespace epochgate::codec
