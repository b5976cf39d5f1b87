// tests/codec/golden_frames_test.cc: frames captured from independent
// implementations (librdkafka 2.15.1 client and mock cluster, kcat, kafka-python;
// tests/codec/golden/README.md) decode, and re-encode byte for byte (size
// prefix, header and body), for every frame in golden/manifest.txt.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <iostream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "codec/frame_splitter.h"
#include "codec/messages/all.h"

#ifndef EPOCHGATE_GOLDEN_DIR
#error "EPOCHGATE_GOLDEN_DIR must point at tests/codec/golden"
#endif

namespace epochgate::codec {
namespace {

struct Golden {
  std::string file;
  bool request = true;
  int16_t api_key = 0;
  int16_t version = 0;
  std::string source;
};

// Short names in test listings (ctest shows the printed parameter).
void PrintTo(const Golden& g, std::ostream* os) { *os << g.file; }

std::vector<Golden> load_manifest() {
  std::vector<Golden> out;
  std::ifstream in(std::string(EPOCHGATE_GOLDEN_DIR) + "/manifest.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    Golden g;
    std::string dir;
    int key = 0, ver = 0;
    ls >> g.file >> dir >> key >> ver >> g.source;
    g.request = dir == "request";
    g.api_key = static_cast<int16_t>(key);
    g.version = static_cast<int16_t>(ver);
    out.push_back(g);
  }
  return out;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Frames that real peers send with bytes after the body (the peers themselves
// and Kafka brokers ignore them). Any other frame must decode exactly.
struct Quirk {
  const char* source_prefix;
  int16_t api_key;
  bool request;
  int16_t min_version;
  const char* why;
};
constexpr Quirk kQuirks[] = {
    {"librdkafka-2.15.1", kMetadata, true, 9,
     "all-topics Metadata v9+ request: librdkafka leaves its 4-byte array-count placeholder "
     "instead of a 1-byte null compact array (rd_kafka_MetadataRequest0), 3 bytes trail"},
    {"", kMetadata, false, 9,
     "librdkafka's mock cluster writes the flexible Metadata response's tagged-field byte "
     "twice (handler and send_response), 1 byte trails"},
    {"", kApiVersions, false, 3,
     "librdkafka's mock cluster answers an unsupported ApiVersions v3 with a hand-made "
     "non-flexible body (error 35); clients only read the error code and retry with v0"},
};

const Quirk* quirk_for(const Golden& g) {
  for (const Quirk& q : kQuirks) {
    if (g.source.rfind(q.source_prefix, 0) == 0 && g.api_key == q.api_key &&
        g.request == q.request && g.version >= q.min_version)
      return &q;
  }
  return nullptr;
}

template <class M, class H>
void decode_and_encode(const Golden& g, const uint8_t* body_bytes, size_t body_len, M& body,
                       const H& h, std::vector<uint8_t>& again) {
  Status strict = decode_body(body_bytes, body_len, g.version, body);
  if (!strict.ok()) {
    const Quirk* q = quirk_for(g);
    ASSERT_TRUE(strict.code == Errc::kTrailingBytes && q != nullptr)
        << M::kName << " v" << g.version << ": " << strict.message();
    Bytes trailing;
    ASSERT_TRUE(decode_body_allow_trailing(body_bytes, body_len, g.version, body, trailing).ok());
    encode_frame(again, h, body, g.version);
    again.insert(again.end(), trailing.data, trailing.data + trailing.size);
    // The size prefix covers the trailing bytes too.
    uint32_t n = static_cast<uint32_t>(again.size() - 4);
    for (int i = 0; i < 4; ++i) again[i] = static_cast<uint8_t>(n >> (24 - 8 * i));
    std::cout << "  known quirk in " << g.file << ": " << trailing.size
              << " trailing byte(s): " << q->why << "\n";
    return;
  }
  encode_frame(again, h, body, g.version);
}

// Decodes `payload` (frame without size prefix) as M, re-encodes the whole
// frame (plus any trailing bytes a known quirk left) and compares.
template <class M>
void check_frame(const Golden& g, const std::vector<uint8_t>& frame, bool& matched) {
  if (M::kApiKey != g.api_key || M::kIsRequest != g.request) return;
  matched = true;
  const uint8_t* payload = frame.data() + 4;
  const size_t len = frame.size() - 4;
  std::vector<uint8_t> again;
  M body;
  if constexpr (M::kIsRequest) {
    RequestHeader h;
    Status hs = parse_request_header(payload, len, h);
    ASSERT_TRUE(hs.ok()) << hs.message();
    ASSERT_EQ(h.api_key, g.api_key);
    ASSERT_EQ(h.api_version, g.version);
    decode_and_encode(g, payload + h.size, len - h.size, body, h, again);
  } else {
    ResponseHeader h;
    Status hs = parse_response_header(payload, len, response_header_version(M::kApiKey, g.version),
                                      h);
    ASSERT_TRUE(hs.ok()) << hs.message();
    decode_and_encode(g, payload + h.size, len - h.size, body, h, again);
  }
  EXPECT_EQ(again, frame) << g.file;
}

class GoldenFrames : public ::testing::TestWithParam<Golden> {};

TEST_P(GoldenFrames, DecodeEncodeReproducesTheCapturedBytes) {
  const Golden& g = GetParam();
  std::vector<uint8_t> frame = read_file(std::string(EPOCHGATE_GOLDEN_DIR) + "/" + g.file);
  ASSERT_GE(frame.size(), 8u) << g.file;
  // The stored bytes are exactly one whole frame.
  FrameScan scan = scan_frame(frame.data(), frame.size(), kDefaultMaxFrameSize);
  ASSERT_EQ(scan.kind, FrameScan::Kind::kFrame);
  ASSERT_EQ(scan.size + 4, frame.size());
  bool matched = false;
  std::apply([&](auto... m) { (check_frame<decltype(m)>(g, frame, matched), ...); },
             AllMessages{});
  EXPECT_TRUE(matched) << "no generated message for api " << g.api_key;
}

std::string case_name(const ::testing::TestParamInfo<Golden>& i) {
  std::string n = i.param.file;
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Captured, GoldenFrames, ::testing::ValuesIn(load_manifest()), case_name);

TEST(GoldenManifest, CoversTheApisTheClientsSend) {
  std::set<std::pair<int, bool>> seen;
  std::set<std::string> sources;
  for (const Golden& g : load_manifest()) {
    seen.insert({g.api_key, g.request});
    sources.insert(g.source.substr(0, g.source.find('-')));
  }
  for (int key : {kApiVersions, kMetadata, kProduce, kFetch, kListOffsets,
                  kOffsetForLeaderEpoch, kFindCoordinator}) {
    EXPECT_TRUE(seen.count({key, true})) << "no request of api " << key;
    EXPECT_TRUE(seen.count({key, false})) << "no response of api " << key;
  }
  EXPECT_TRUE(sources.count("librdkafka"));
  EXPECT_TRUE(sources.count("kcat"));
  EXPECT_TRUE(sources.count("kafka"));  // kafka-python
}

}  // namespace
}  // namespace epochgate::codec
