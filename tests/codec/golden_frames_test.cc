// tests/codec/golden_frames_test.cc: frames captured from independent
// implementations (librdkafka 2.15.1 client and mock cluster, kcat, kafka-python;
// tests/codec/golden/README.md) decode, and re-encode byte for byte (size
// prefix, header and body), for every frame in golden/manifest.txt. A round
// trip alone passes a field order mistake made the same way in our decoder
// and encoder, so the decoded values are also compared with an independent
// reading of the same bytes: Wireshark's Kafka dissector
// (golden/expected_tshark.txt, tools/capture/golden_expected.py) where it
// reads the frame, the fixed header offsets for every frame, and a
// hand-written walk of the librdkafka 2.15.1 Produce v10 and Fetch v16
// requests tshark 4.0 does not read, checked against what the capture's
// client sent (tools/capture/golden_peer.c: topic "golden", partition 0,
// acks=all). Must never: derive expected values from our own schema.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
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

// ---------------------------------------------------------------- expected
// values from an independent reading of the frame

/// FILE -> FIELD -> tshark's value list ("a,b,c"), from expected_tshark.txt.
using Expected = std::map<std::string, std::map<std::string, std::string>>;

const Expected& tshark_values() {
  static const Expected values = [] {
    Expected out;
    std::ifstream in(std::string(EPOCHGATE_GOLDEN_DIR) + "/expected_tshark.txt");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream ls(line);
      std::string file, field, value;
      ls >> file >> field;
      std::getline(ls >> std::ws, value);
      out[file][field] = value;
    }
    return out;
  }();
  return values;
}

std::string first_of(const std::string& list) { return list.substr(0, list.find(',')); }

/// Decoded values named as tshark names them, first occurrence in wire order.
using Decoded = std::map<std::string, std::string>;

template <class T>
void put(Decoded& d, const char* field, const T& v) {
  if (!d.count(field)) d[field] = std::to_string(v);
}
void put_s(Decoded& d, const char* field, const std::string& v) {
  if (!d.count(field)) d[field] = v;
}

void values_of(const ProduceRequest& m, Decoded& d) {
  put(d, "required_acks", m.acks);
  if (m.topic_data.empty()) return;
  put_s(d, "topic_name", m.topic_data[0].name);
  if (!m.topic_data[0].partition_data.empty())
    put(d, "partition_id", m.topic_data[0].partition_data[0].index);
}
void values_of(const ProduceResponse& m, Decoded& d) {
  if (m.responses.empty()) return;
  put_s(d, "topic_name", m.responses[0].name);
  if (m.responses[0].partition_responses.empty()) return;
  const auto& p = m.responses[0].partition_responses[0];
  put(d, "partition_id", p.index);
  put(d, "error", p.error_code);
  put(d, "offset", p.base_offset);
}
void values_of(const FetchRequest& m, int16_t v, Decoded& d) {
  if (m.topics.empty()) return;
  put_s(d, "topic_name", m.topics[0].topic);
  if (m.topics[0].partitions.empty()) return;
  const auto& p = m.topics[0].partitions[0];
  put(d, "partition_id", p.partition);
  if (v >= 9) put(d, "leader_epoch", p.current_leader_epoch);  // tshark's name for it
  put(d, "offset", p.fetch_offset);
}
void values_of(const FetchResponse& m, int16_t v, Decoded& d) {
  if (v >= 7) put(d, "error", m.error_code);
  if (m.responses.empty()) return;
  put_s(d, "topic_name", m.responses[0].topic);
  if (m.responses[0].partitions.empty()) return;
  const auto& p = m.responses[0].partitions[0];
  put(d, "partition_id", p.partition_index);
  put(d, "error", p.error_code);
  put(d, "offset", p.high_watermark);
}
void values_of(const ListOffsetsRequest& m, Decoded& d) {
  if (m.topics.empty()) return;
  put_s(d, "topic_name", m.topics[0].name);
  if (!m.topics[0].partitions.empty()) put(d, "partition_id", m.topics[0].partitions[0].partition_index);
}
void values_of(const ListOffsetsResponse& m, Decoded& d) {
  if (m.topics.empty()) return;
  put_s(d, "topic_name", m.topics[0].name);
  if (m.topics[0].partitions.empty()) return;
  const auto& p = m.topics[0].partitions[0];
  put(d, "partition_id", p.partition_index);
  put(d, "error", p.error_code);
  put(d, "offset", p.offset);
}
void values_of(const MetadataRequest& m, Decoded& d) {
  if (m.topics && !m.topics->empty() && (*m.topics)[0].name)
    put_s(d, "topic_name", *(*m.topics)[0].name);
}
void values_of(const MetadataResponse& m, Decoded& d) {
  if (m.topics.empty()) return;
  put(d, "error", m.topics[0].error_code);
  if (m.topics[0].name) put_s(d, "topic_name", *m.topics[0].name);
  if (!m.topics[0].partitions.empty())
    put(d, "partition_id", m.topics[0].partitions[0].partition_index);
}
void values_of(const FindCoordinatorResponse& m, int16_t v, Decoded& d) {
  if (v < 4) put(d, "error", m.error_code);
}
void values_of(const OffsetForLeaderEpochRequest& m, Decoded& d) {
  if (m.topics.empty()) return;
  put_s(d, "topic_name", m.topics[0].topic);
  if (m.topics[0].partitions.empty()) return;
  const auto& p = m.topics[0].partitions[0];
  put(d, "partition_id", p.partition);
  put(d, "current_leader_epoch", p.current_leader_epoch);
  put(d, "leader_epoch", p.leader_epoch);
}
void values_of(const OffsetForLeaderEpochResponse& m, Decoded& d) {
  if (m.topics.empty()) return;
  put_s(d, "topic_name", m.topics[0].topic);
  if (m.topics[0].partitions.empty()) return;
  const auto& p = m.topics[0].partitions[0];
  put(d, "error", p.error_code);
  put(d, "partition_id", p.partition);
  put(d, "leader_epoch", p.leader_epoch);
  put(d, "offset", p.end_offset);
}

/// The values of one decoded message that tshark's output is compared with.
template <class M>
Decoded decoded_values(const M& m, int16_t version) {
  Decoded d;
  if constexpr (std::is_same_v<M, FetchRequest> || std::is_same_v<M, FetchResponse> ||
                std::is_same_v<M, FindCoordinatorResponse>) {
    values_of(m, version, d);
  } else if constexpr (std::is_same_v<M, ProduceRequest> || std::is_same_v<M, ProduceResponse> ||
                       std::is_same_v<M, ListOffsetsRequest> ||
                       std::is_same_v<M, ListOffsetsResponse> ||
                       std::is_same_v<M, MetadataRequest> || std::is_same_v<M, MetadataResponse> ||
                       std::is_same_v<M, OffsetForLeaderEpochRequest> ||
                       std::is_same_v<M, OffsetForLeaderEpochResponse>) {
    values_of(m, d);
  }
  return d;
}

/// Fields compared with tshark: header fields in full, body fields by their
/// first occurrence (tshark lists record offsets and nested errors too).
constexpr const char* kHeaderFields[] = {"correlation_id", "api_key", "api_version", "client_id"};
constexpr const char* kBodyFields[] = {"required_acks", "topic_name", "partition_id",
                                       "current_leader_epoch", "leader_epoch", "error",
                                       "offset"};

/// Counts the values compared, so a test that compares nothing fails.
size_t& tshark_compared() {
  static size_t n = 0;
  return n;
}

void compare_with_tshark(const Golden& g, const Decoded& ours) {
  auto it = tshark_values().find(g.file);
  if (it == tshark_values().end()) return;  // tshark does not read this version
  const auto& theirs = it->second;
  for (const char* f : kHeaderFields) {
    auto t = theirs.find(f);
    if (t == theirs.end()) continue;
    auto o = ours.find(f);
    ASSERT_NE(o, ours.end()) << g.file << ": tshark reads " << f << " = " << t->second;
    EXPECT_EQ(o->second, t->second) << g.file << " " << f;
    ++tshark_compared();
  }
  for (const char* f : kBodyFields) {
    auto t = theirs.find(f);
    if (t == theirs.end()) continue;
    // Record-batch offsets and epochs inside Produce requests and Fetch
    // responses are tshark's reading of the records, which our codec keeps
    // as opaque bytes: only fields of the message itself are compared.
    if ((std::string(f) == "leader_epoch" || std::string(f) == "offset") &&
        ((g.api_key == kProduce && g.request) ||
         (g.api_key == kFetch && !g.request && std::string(f) == "leader_epoch")))
      continue;
    auto o = ours.find(f);
    if (o == ours.end()) {
      ADD_FAILURE() << g.file << ": tshark reads " << f << " = " << t->second
                    << " but the decoded message has none";
      continue;
    }
    EXPECT_EQ(o->second, first_of(t->second)) << g.file << " " << f << " (tshark: " << t->second
                                              << ")";
    ++tshark_compared();
  }
}

// Big-endian reads at fixed offsets of the frame (size prefix included).
int16_t be16(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<int16_t>((f.at(at) << 8) | f.at(at + 1));
}
int32_t be32(const std::vector<uint8_t>& f, size_t at) {
  return static_cast<int32_t>((uint32_t(f.at(at)) << 24) | (uint32_t(f.at(at + 1)) << 16) |
                              (uint32_t(f.at(at + 2)) << 8) | f.at(at + 3));
}
uint32_t uvarint(const std::vector<uint8_t>& f, size_t& at) {
  uint32_t v = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    uint8_t b = f.at(at++);
    v |= uint32_t(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  return v;
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
    // The request header at its fixed offsets: key, version, correlation id,
    // client id (INT16 length, then bytes).
    EXPECT_EQ(h.api_key, be16(frame, 4));
    EXPECT_EQ(h.api_version, be16(frame, 6));
    EXPECT_EQ(h.correlation_id, be32(frame, 8));
    const int16_t client_len = be16(frame, 12);
    ASSERT_TRUE(h.client_id.has_value() == (client_len >= 0));
    if (h.client_id) {
      EXPECT_EQ(*h.client_id,
                std::string(reinterpret_cast<const char*>(frame.data()) + 14, client_len));
    }
    decode_and_encode(g, payload + h.size, len - h.size, body, h, again);
    Decoded d = decoded_values(body, g.version);
    d["correlation_id"] = std::to_string(h.correlation_id);
    d["api_key"] = std::to_string(h.api_key);
    d["api_version"] = std::to_string(h.api_version);
    if (h.client_id) d["client_id"] = std::string(*h.client_id);
    compare_with_tshark(g, d);
  } else {
    ResponseHeader h;
    Status hs = parse_response_header(payload, len, response_header_version(M::kApiKey, g.version),
                                      h);
    ASSERT_TRUE(hs.ok()) << hs.message();
    EXPECT_EQ(h.correlation_id, be32(frame, 4));
    decode_and_encode(g, payload + h.size, len - h.size, body, h, again);
    Decoded d = decoded_values(body, g.version);
    d["correlation_id"] = std::to_string(h.correlation_id);
    d["api_key"] = std::to_string(M::kApiKey);  // tshark takes it from the request
    compare_with_tshark(g, d);
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

TEST(GoldenFrameValues, TsharkReadsTheSameValuesAsOurDecoder) {
  // Runs every frame tshark reads and counts the values compared: at least
  // one per header field and body field listed for each such frame.
  tshark_compared() = 0;
  size_t frames = 0;
  for (const Golden& g : load_manifest()) {
    if (!tshark_values().count(g.file)) continue;
    ++frames;
    std::vector<uint8_t> frame = read_file(std::string(EPOCHGATE_GOLDEN_DIR) + "/" + g.file);
    bool matched = false;
    std::apply([&](auto... m) { (check_frame<decltype(m)>(g, frame, matched), ...); },
               AllMessages{});
  }
  EXPECT_GE(frames, 45u) << "expected_tshark.txt lists too few frames";
  // Every non-comment line of expected_tshark.txt but the record-level ones
  // (offsets and epochs inside Produce requests' record batches, epochs
  // inside Fetch responses' batches) is one value compared.
  size_t listed = 0;
  for (const auto& [file, fields] : tshark_values())
    for (const auto& [field, value] : fields) {
      (void)value;
      const bool produce_request = file.find("/req_Produce") != std::string::npos;
      const bool fetch_response = file.find("/resp_Fetch") != std::string::npos;
      if (produce_request && (field == "offset" || field == "leader_epoch")) continue;
      if (fetch_response && field == "leader_epoch") continue;
      ++listed;
    }
  EXPECT_GE(listed, 200u);
  EXPECT_EQ(tshark_compared(), listed) << "a value tshark read was not compared";
}

/// Walks the librdkafka 2.15.1 Produce v10 request by hand (request header
/// v2, KIP-482 compact types): header, TransactionalId, Acks, TimeoutMs,
/// then the first topic's name and first partition's index.
TEST(GoldenFrameValues, LibrdkafkaProduceV10ByHand) {
  std::vector<uint8_t> f =
      read_file(std::string(EPOCHGATE_GOLDEN_DIR) + "/librdkafka-2.15.1/req_Produce_v10_0.bin");
  ASSERT_GT(f.size(), 40u);
  size_t at = 12;
  at += 2 + be16(f, 12);             // client id
  ASSERT_EQ(uvarint(f, at), 0u);     // no header tagged fields
  uint32_t txn = uvarint(f, at);     // COMPACT_NULLABLE_STRING: 0 = null
  if (txn > 0) at += txn - 1;
  const int16_t acks = be16(f, at);
  at += 2;
  const int32_t timeout = be32(f, at);
  at += 4;
  ASSERT_EQ(uvarint(f, at), 2u);     // one topic
  uint32_t name_len = uvarint(f, at) - 1;
  std::string topic(reinterpret_cast<const char*>(f.data()) + at, name_len);
  at += name_len;
  ASSERT_EQ(uvarint(f, at), 2u);     // one partition
  const int32_t index = be32(f, at);
  // What golden_peer.c's idempotent producer sent.
  EXPECT_EQ(acks, -1);
  EXPECT_EQ(topic, "golden");
  EXPECT_EQ(index, 0);

  RequestHeader h;
  ASSERT_TRUE(parse_request_header(f.data() + 4, f.size() - 4, h).ok());
  ProduceRequest m;
  ASSERT_TRUE(decode_body(f.data() + 4 + h.size, f.size() - 4 - h.size, 10, m).ok());
  EXPECT_EQ(h.correlation_id, be32(f, 8));
  EXPECT_EQ(std::string(h.client_id.value_or("")), "golden-producer");
  EXPECT_EQ(m.acks, acks);
  EXPECT_EQ(m.timeout_ms, timeout);
  EXPECT_FALSE(m.transactional_id.has_value() && txn == 0);
  ASSERT_EQ(m.topic_data.size(), 1u);
  EXPECT_EQ(m.topic_data[0].name, topic);
  ASSERT_FALSE(m.topic_data[0].partition_data.empty());
  EXPECT_EQ(m.topic_data[0].partition_data[0].index, index);
}

/// Walks the librdkafka 2.15.1 Fetch v16 request by hand: MaxWaitMs,
/// MinBytes, MaxBytes, IsolationLevel, SessionId, SessionEpoch, then the
/// first topic's id (UUID) and its first partition's index,
/// CurrentLeaderEpoch and FetchOffset (KIP-516, KIP-903: no ReplicaId field).
TEST(GoldenFrameValues, LibrdkafkaFetchV16ByHand) {
  std::vector<uint8_t> f =
      read_file(std::string(EPOCHGATE_GOLDEN_DIR) + "/librdkafka-2.15.1/req_Fetch_v16_0.bin");
  ASSERT_GT(f.size(), 60u);
  size_t at = 12;
  at += 2 + be16(f, 12);
  ASSERT_EQ(uvarint(f, at), 0u);
  const int32_t max_wait = be32(f, at);
  const int32_t min_bytes = be32(f, at + 4);
  const int32_t max_bytes = be32(f, at + 8);
  const int8_t isolation = static_cast<int8_t>(f.at(at + 12));
  const int32_t session_id = be32(f, at + 13);
  const int32_t session_epoch = be32(f, at + 17);
  at += 21;
  ASSERT_EQ(uvarint(f, at), 2u);  // one topic
  std::vector<uint8_t> topic_id(f.begin() + at, f.begin() + at + 16);
  at += 16;
  ASSERT_GE(uvarint(f, at), 2u);
  const int32_t partition = be32(f, at);
  const int32_t leader_epoch = be32(f, at + 4);
  const int64_t fetch_offset = (int64_t(be32(f, at + 8)) << 32) | uint32_t(be32(f, at + 12));
  // golden_peer.c's consumer reads golden[0] of a 1-partition topic.
  EXPECT_EQ(partition, 0);
  EXPECT_GE(leader_epoch, 0) << "librdkafka 2.15.1 sends the leader epoch it knows";

  RequestHeader h;
  ASSERT_TRUE(parse_request_header(f.data() + 4, f.size() - 4, h).ok());
  FetchRequest m;
  ASSERT_TRUE(decode_body(f.data() + 4 + h.size, f.size() - 4 - h.size, 16, m).ok());
  EXPECT_EQ(m.max_wait_ms, max_wait);
  EXPECT_EQ(m.min_bytes, min_bytes);
  EXPECT_EQ(m.max_bytes, max_bytes);
  EXPECT_EQ(m.isolation_level, isolation);
  EXPECT_EQ(m.session_id, session_id);
  EXPECT_EQ(m.session_epoch, session_epoch);
  ASSERT_FALSE(m.topics.empty());
  EXPECT_EQ(0, std::memcmp(m.topics[0].topic_id.data(), topic_id.data(), 16));
  ASSERT_FALSE(m.topics[0].partitions.empty());
  EXPECT_EQ(m.topics[0].partitions[0].partition, partition);
  EXPECT_EQ(m.topics[0].partitions[0].current_leader_epoch, leader_epoch);
  EXPECT_EQ(m.topics[0].partitions[0].fetch_offset, fetch_offset);
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
