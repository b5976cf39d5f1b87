// tests/codec/hostile_input_test.cc: malformed bodies given to generated
// decoders each return the matching Errc (never a crash), counts that cannot
// fit are refused before anything is allocated, and tagged fields (known,
// unknown, a tag known only in other versions) survive decode -> encode.
#include <gtest/gtest.h>

// The replaced operator new/delete below pair malloc with free on purpose.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "codec/api_versions_io.h"
#include "codec/messages/all.h"

// Largest single allocation while tracking is on: proves that a wire count is
// checked against the bytes left before a vector is sized from it.
namespace {
std::atomic<bool> g_track{false};
std::atomic<size_t> g_largest{0};
void note(size_t n) {
  if (!g_track.load(std::memory_order_relaxed)) return;
  size_t cur = g_largest.load();
  while (n > cur && !g_largest.compare_exchange_weak(cur, n)) {
  }
}
}  // namespace

void* operator new(size_t n) {
  note(n);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace epochgate::codec {
namespace {

using Buf = std::vector<uint8_t>;

struct Body {
  Buf b;
  Writer w{b};
};

template <class M>
Status decode(const Buf& b, int16_t v, M& m) {
  return decode_body(b.data(), b.size(), v, m);
}

template <class M>
Buf encode(const M& m, int16_t v) {
  Buf out;
  Writer w(out);
  m.encode(w, v);
  return out;
}

TEST(HostileInput, TruncatedBodyIsTruncated) {
  Body x;
  x.w.int32(1);        // ThrottleTimeMs (v3+)
  x.w.int32(0);        // Brokers: empty
  x.w.int16(-1);       // ClusterId null
  x.w.int16(0x0102);   // ControllerId cut after 2 of 4 bytes
  MetadataResponse m;
  Status s = decode(x.b, 5, m);
  EXPECT_EQ(s.code, Errc::kTruncated);
  EXPECT_STREQ(s.field, "ControllerId");
  EXPECT_EQ(s.offset, x.b.size() - 2);  // where the cut field starts
}

TEST(HostileInput, StringLongerThanTheBytesLeftIsLengthOverflow) {
  Body x;
  x.w.int32(1);   // Topics: one
  x.w.int16(100); // Name: 100 bytes claimed
  x.w.raw("abc", 3);
  MetadataRequest m;
  Status s = decode(x.b, 3, m);
  EXPECT_EQ(s.code, Errc::kLengthOverflow);
  EXPECT_STREQ(s.field, "Name");
}

TEST(HostileInput, ArrayCountThatCannotFitFailsWithoutAllocating) {
  Body x;
  x.w.int32(0x7fffffff);  // Brokers: 2^31-1 brokers in 12 bytes
  x.w.int32(0);
  x.w.int32(0);
  MetadataResponse m;
  g_largest = 0;
  g_track = true;
  Status s = decode(x.b, 0, m);
  g_track = false;
  EXPECT_EQ(s.code, Errc::kLengthOverflow);
  EXPECT_STREQ(s.field, "Brokers");
  EXPECT_LT(g_largest.load(), size_t{4096});

  // Compact form: Produce v9 TopicData count 2^32-2, and records that claim
  // more bytes than the frame holds.
  Body y;
  y.w.uvarint(0);  // TransactionalId null
  y.w.int16(-1);
  y.w.int32(1000);
  y.w.uvarint(0xffffffffu);
  ProduceRequest p;
  g_largest = 0;
  g_track = true;
  s = decode(y.b, 9, p);
  g_track = false;
  EXPECT_EQ(s.code, Errc::kLengthOverflow);
  EXPECT_LT(g_largest.load(), size_t{4096});

  // 200 elements of at least 8 bytes each do not fit in 1 KiB: refused at
  // the count, before resizing (element min size is per struct and version).
  Body z;
  z.w.int32(200);
  for (int i = 0; i < 250; ++i) z.w.int32(0);
  g_largest = 0;
  g_track = true;
  s = decode(z.b, 0, m);
  g_track = false;
  EXPECT_EQ(s.code, Errc::kLengthOverflow);
  EXPECT_LT(g_largest.load(), size_t{4096});
}

TEST(HostileInput, VarintLongerThanItsTypeIsBadVarint) {
  Body x;
  x.w.raw("\x80\x80\x80\x80\x80\x01", 6);  // ClientSoftwareName length: 6-byte uvarint
  ApiVersionsRequest m;
  EXPECT_EQ(decode(x.b, 3, m).code, Errc::kBadVarint);
}

TEST(HostileInput, UnknownVersionIsUnsupported) {
  Buf empty;
  ProduceRequest p;
  EXPECT_EQ(decode(empty, 14, p).code, Errc::kUnsupportedVersion);
  EXPECT_EQ(decode(empty, -1, p).code, Errc::kUnsupportedVersion);
  FetchResponse f;
  EXPECT_EQ(decode(empty, 19, f).code, Errc::kUnsupportedVersion);
  ShareFetchRequest sf;
  EXPECT_EQ(decode(empty, 3, sf).code, Errc::kUnsupportedVersion);
}

// ApiVersionsResponse v3 body up to its tagged section.
Body api_versions_v3_prefix() {
  Body x;
  x.w.int16(0);      // ErrorCode
  x.w.uvarint(1);    // ApiKeys: empty compact array
  x.w.int32(0);      // ThrottleTimeMs
  return x;
}

TEST(HostileInput, TagsNotAscendingOrRepeatedAreBadTaggedFields) {
  Body x = api_versions_v3_prefix();
  x.w.uvarint(2);
  x.w.uvarint(3);  // ZkMigrationReady
  x.w.uvarint(1);
  x.w.boolean(true);
  x.w.uvarint(1);  // FinalizedFeaturesEpoch after 3: not ascending
  x.w.uvarint(8);
  x.w.int64(5);
  ApiVersionsResponse m;
  EXPECT_EQ(decode(x.b, 3, m).code, Errc::kBadTaggedFields);

  Body y = api_versions_v3_prefix();
  y.w.uvarint(2);
  for (int i = 0; i < 2; ++i) {  // tag 9 twice
    y.w.uvarint(9);
    y.w.uvarint(0);
  }
  EXPECT_EQ(decode(y.b, 3, m).code, Errc::kBadTaggedFields);
}

TEST(HostileInput, KnownTagWhoseSizeDisagreesWithItsValueIsBadTaggedFields) {
  Body x = api_versions_v3_prefix();
  x.w.uvarint(1);
  x.w.uvarint(3);  // ZkMigrationReady: a bool declared as 2 bytes
  x.w.uvarint(2);
  x.w.boolean(true);
  x.w.int8(0);
  ApiVersionsResponse m;
  EXPECT_EQ(decode(x.b, 3, m).code, Errc::kBadTaggedFields);
}

TEST(HostileInput, NullInANonNullableVersionIsUnexpectedNull) {
  Body x;
  x.w.int32(-1);  // ReplicaId
  x.w.int32(0);   // MaxWaitMs
  x.w.int32(0);   // MinBytes
  x.w.int32(0);   // MaxBytes
  x.w.int8(0);    // IsolationLevel
  x.w.int32(1);   // Topics: one
  x.w.int16(-1);  // Topic: null, never nullable
  x.w.int32(0);   // Partitions: empty (so the count of one topic fits)
  x.w.int32(0);   // filler: never reached
  FetchRequest m;
  Status s = decode(x.b, 4, m);
  EXPECT_EQ(s.code, Errc::kUnexpectedNull);
  EXPECT_STREQ(s.field, "Topic");
}

TEST(TaggedFields, KnownAndUnknownTagsRoundTripInAscendingOrder) {
  Body x = api_versions_v3_prefix();
  x.w.uvarint(4);
  x.w.uvarint(1);  // FinalizedFeaturesEpoch, known
  x.w.uvarint(8);
  x.w.int64(77);
  x.w.uvarint(3);  // ZkMigrationReady = false: equal to its default, still on the wire
  x.w.uvarint(1);
  x.w.boolean(false);
  x.w.uvarint(4);  // unknown
  x.w.uvarint(2);
  x.w.raw("zz", 2);
  x.w.uvarint(40);  // unknown
  x.w.uvarint(0);
  ApiVersionsResponse m;
  ASSERT_TRUE(decode(x.b, 3, m).ok());
  EXPECT_EQ(m.finalized_features_epoch, std::optional<int64_t>(77));
  EXPECT_EQ(m.zk_migration_ready, std::optional<bool>(false));
  EXPECT_FALSE(m.supported_features.has_value());
  ASSERT_EQ(m.unknown_tagged_fields.size(), 2u);
  EXPECT_EQ(m.unknown_tagged_fields[0].tag, 4u);
  EXPECT_EQ(m.unknown_tagged_fields[0].data.view(), "zz");
  EXPECT_EQ(encode(m, 3), x.b);

  // An unknown tag below a known one is written back in order too.
  m.unknown_tagged_fields.insert(m.unknown_tagged_fields.begin(),
                                 TaggedField{0, Bytes{nullptr, 0, false}});
  m.supported_features.reset();
  Buf again = encode(m, 3);
  ApiVersionsResponse back;
  // Tag 0 is SupportedFeatures, known: an empty payload is not a valid array.
  EXPECT_FALSE(decode(again, 3, back).ok());
}

TEST(TaggedFields, ATagKnownOnlyInLaterVersionsIsKeptRaw) {
  // FetchResponse v12: NodeEndpoints (tag 0) exists only from v16, so tag 0
  // at v12 is an unknown tag and must come back unchanged.
  Body x;
  x.w.int32(0);    // ThrottleTimeMs
  x.w.int16(0);    // ErrorCode
  x.w.int32(0);    // SessionId
  x.w.uvarint(1);  // Responses: empty
  x.w.uvarint(1);
  x.w.uvarint(0);
  x.w.uvarint(3);
  x.w.raw("\x01\x02\x03", 3);
  FetchResponse m;
  ASSERT_TRUE(decode(x.b, 12, m).ok());
  EXPECT_FALSE(m.node_endpoints.has_value());
  ASSERT_EQ(m.unknown_tagged_fields.size(), 1u);
  EXPECT_EQ(encode(m, 12), x.b);
  // At v16 the same bytes are a NodeEndpoints array that does not parse.
  EXPECT_FALSE(decode(x.b, 16, m).ok());
}

TEST(TaggedFields, NestedStructTagsAndDefaults) {
  ProduceResponse r;
  auto& t = r.responses.emplace_back();
  t.name = "t";
  auto& p = t.partition_responses.emplace_back();
  p.error_code = 6;  // NOT_LEADER_OR_FOLLOWER
  auto& leader = p.current_leader.emplace();
  EXPECT_EQ(leader.leader_id, -1);  // schema default
  EXPECT_EQ(leader.leader_epoch, -1);
  leader.leader_id = 2;
  leader.leader_epoch = 9;
  r.node_endpoints.emplace().push_back({2, "proxy", 9092, std::nullopt, {}});
  Buf b = encode(r, 10);
  ProduceResponse back;
  ASSERT_TRUE(decode(b, 10, back).ok());
  EXPECT_TRUE(back == r);
  // v9 has no CurrentLeader/NodeEndpoints: they are not encoded.
  Buf v9 = encode(r, 9);
  ASSERT_TRUE(decode(v9, 9, back).ok());
  EXPECT_FALSE(back.responses[0].partition_responses[0].current_leader.has_value());
  EXPECT_FALSE(back.node_endpoints.has_value());
}

}  // namespace
}  // namespace epochgate::codec

namespace epochgate::codec {
namespace {

TEST(ApiVersionsFallback, UnsupportedVersionAnswerIsReadAsVersionZero) {
  // What a broker without ApiVersions v5 sends to a v5 request: a v0 body,
  // error 35, its ApiVersions range 0-3.
  Buf b;
  Writer w(b);
  w.int16(35);
  w.int32(1);
  w.int16(18);
  w.int16(0);
  w.int16(3);
  ApiVersionsResponse r;
  int16_t used = -1;
  Status s = decode_api_versions_response(b.data(), b.size(), 5, r, used);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(used, 0);
  EXPECT_EQ(r.error_code, 35);
  ASSERT_EQ(r.api_keys.size(), 1u);
  EXPECT_EQ(r.api_keys[0].max_version, 3);

  // A normal v3 answer decodes in v3.
  ApiVersionsResponse ok;
  ok.api_keys.push_back({0, 0, 13, {}});
  Buf v3;
  Writer w3(v3);
  ok.encode(w3, 3);
  ASSERT_TRUE(decode_api_versions_response(v3.data(), v3.size(), 3, r, used).ok());
  EXPECT_EQ(used, 3);

  // Garbage with error 35 that decodes in neither version keeps the first error.
  Buf bad{0, 35, 0x7f};
  EXPECT_FALSE(decode_api_versions_response(bad.data(), bad.size(), 3, r, used).ok());
}

}  // namespace
}  // namespace epochgate::codec
