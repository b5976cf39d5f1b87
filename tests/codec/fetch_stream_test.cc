// tests/codec/fetch_stream_test.cc: the incremental Fetch response reader
// (codec/fetch_stream.h) and the same-length tail rewrite
// (codec/fetch_tail.h), over responses the generated codec encodes, fed
// byte by byte and in random chunks as a socket would deliver them.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "opaque_records.h"
#include "codec/fetch_stream.h"
#include "codec/fetch_tail.h"
#include "codec/message_io.h"
#include "codec/messages/fetch_response.h"

namespace epochgate::proxy {
namespace {

using codec::FetchResponse;

using test::records_of;

struct Built {
  std::vector<std::vector<uint8_t>> records;  // keeps record views alive
  std::vector<uint8_t> frame;                 // size prefix included
};

// A response of `topics` x `parts` partitions with records; partition 1 of
// topic 0 has a leader error with CurrentLeader (v12+), partition 2 one
// without; aborted transactions on partition 0.
Built build(int16_t version, bool endpoints, size_t topics = 2, size_t parts = 3,
            size_t record_bytes = 5000) {
  Built b;
  FetchResponse m;
  m.throttle_time_ms = 7;
  m.error_code = 0;
  m.session_id = 99;
  uint32_t seed = 1;
  for (size_t t = 0; t < topics; ++t) {
    FetchResponse::FetchableTopicResponse topic;
    topic.topic = "topic-" + std::to_string(t);
    topic.topic_id[0] = static_cast<uint8_t>(t + 1);
    for (size_t p = 0; p < parts; ++p) {
      FetchResponse::PartitionData part;
      part.partition_index = static_cast<int32_t>(p);
      part.high_watermark = 1000 + static_cast<int64_t>(p);
      if (t == 0 && p == 0)
        part.aborted_transactions = std::vector<FetchResponse::AbortedTransaction>{{5, 10, {}}, {6, 11, {}}};
      if (t == 0 && p == 1) {
        part.error_code = 6;  // NOT_LEADER_OR_FOLLOWER
        if (version >= 12) part.current_leader = FetchResponse::LeaderIdAndEpoch{3, 17, {}};
      } else if (t == 0 && p == 2) {
        part.error_code = 74;  // FENCED_LEADER_EPOCH, no hint
      } else {
        b.records.push_back(records_of(record_bytes + p * 333, seed++));
        part.records = codec::Bytes{b.records.back().data(), static_cast<uint32_t>(b.records.back().size())};
      }
      if (version >= 12 && p == 0) part.diverging_epoch = FetchResponse::EpochEndOffset{4, 40, {}};
      topic.partitions.push_back(std::move(part));
    }
    m.responses.push_back(std::move(topic));
  }
  if (endpoints && version >= 16)
    m.node_endpoints = std::vector<FetchResponse::NodeEndpoint>{
        {3, "broker-3.internal.example", 19093, std::string("rack-a"), {}},
        {4, "broker-4.internal.example", 19094, std::nullopt, {}}};
  codec::ResponseHeader h;
  h.correlation_id = 4242;
  h.header_version = version >= 12 ? 1 : 0;
  codec::encode_frame(b.frame, h, m, version);
  return b;
}

struct Fed {
  FetchStreamParser::Result result = FetchStreamParser::Result::kNeedMore;
  std::vector<uint8_t> passed;  // consumed bytes, in order
  std::vector<uint8_t> tail;
};

// Feeds `payload` in chunks from `next_chunk`, keeping unconsumed bytes as
// a read buffer does, until the tail or an error.
template <typename Chunks>
Fed feed_all(FetchStreamParser& p, const std::vector<uint8_t>& payload, Chunks next_chunk) {
  Fed f;
  std::vector<uint8_t> pending;
  size_t at = 0;
  while (true) {
    size_t n = std::min(next_chunk(), payload.size() - at);
    pending.insert(pending.end(), payload.begin() + at, payload.begin() + at + n);
    at += n;
    size_t consumed = 0;
    f.result = p.feed(pending.data(), pending.size(), consumed);
    f.passed.insert(f.passed.end(), pending.begin(), pending.begin() + consumed);
    pending.erase(pending.begin(), pending.begin() + consumed);
    if (f.result == FetchStreamParser::Result::kTail) {
      f.tail.assign(pending.begin(), pending.begin() + p.tail_size());
      return f;
    }
    if (f.result == FetchStreamParser::Result::kError) return f;
    if (at == payload.size() && n == 0) return f;  // starved: stays kNeedMore
  }
}

std::vector<uint8_t> payload_of(const Built& b) { return {b.frame.begin() + 4, b.frame.end()}; }

const int16_t kVersions[] = {0, 1, 4, 5, 7, 11, 12, 13, 15, 16, 17, 18};

TEST(FetchStreamParser, ByteByByteEveryVersionPassesEveryByteUnchanged) {
  for (int16_t v : kVersions) {
    SCOPED_TRACE("version " + std::to_string(v));
    Built b = build(v, false);
    auto payload = payload_of(b);
    FetchStreamParser p(v, payload.size());
    Fed f = feed_all(p, payload, [] { return size_t{1}; });
    ASSERT_EQ(f.result, FetchStreamParser::Result::kTail) << p.error_detail();
    std::vector<uint8_t> out = f.passed;
    out.insert(out.end(), f.tail.begin(), f.tail.end());
    EXPECT_EQ(out, payload);
    EXPECT_FALSE(p.skeleton().node_endpoints.has_value());
  }
}

TEST(FetchStreamParser, RandomChunksPassEveryByteUnchanged) {
  for (int16_t v : kVersions) {
    for (uint32_t seed = 1; seed <= 20; ++seed) {
      SCOPED_TRACE("version " + std::to_string(v) + " seed " + std::to_string(seed));
      Built b = build(v, true, 3, 4, 700 + seed * 97);
      auto payload = payload_of(b);
      std::mt19937 rnd(seed);
      FetchStreamParser p(v, payload.size());
      Fed f = feed_all(p, payload, [&] { return size_t{1} + rnd() % 3000; });
      ASSERT_EQ(f.result, FetchStreamParser::Result::kTail) << p.error_detail();
      std::vector<uint8_t> out = f.passed;
      out.insert(out.end(), f.tail.begin(), f.tail.end());
      EXPECT_EQ(out, payload);
    }
  }
}

// What a splicing caller does: whenever the parser is inside Records with
// nothing unparsed, part of the record bytes go past it (pass_records());
// the rest is fed as usual. The bytes still line up and the same partitions
// are learned; a response whose last bytes are records (before v12 nothing
// follows them) ends with an empty feed().
TEST(FetchStreamParser, RecordsPassedAroundItKeepTheParseInStep) {
  for (int16_t v : kVersions) {
    for (uint32_t seed = 1; seed <= 10; ++seed) {
      SCOPED_TRACE("version " + std::to_string(v) + " seed " + std::to_string(seed));
      Built b = build(v, true, 2, 3, 4000 + seed * 131);
      auto payload = payload_of(b);
      FetchStreamParser whole(v, payload.size());
      ASSERT_EQ(feed_all(whole, payload, [] { return size_t{100000}; }).result,
                FetchStreamParser::Result::kTail);
      std::mt19937 rnd(seed);
      FetchStreamParser p(v, payload.size());
      std::vector<uint8_t> out, pending;
      size_t at = 0, passed = 0;
      FetchStreamParser::Result r = FetchStreamParser::Result::kNeedMore;
      for (int guard = 0; guard < 100000 && r == FetchStreamParser::Result::kNeedMore; ++guard) {
        if (pending.empty() && p.records_left() > 0) {
          size_t n = 1 + rnd() % p.records_left();
          out.insert(out.end(), payload.begin() + at, payload.begin() + at + n);
          at += n;
          passed += n;
          p.pass_records(n);
        } else {
          size_t n = std::min<size_t>(1 + rnd() % 300, payload.size() - at);
          pending.insert(pending.end(), payload.begin() + at, payload.begin() + at + n);
          at += n;
        }
        size_t consumed = 0;
        r = p.feed(pending.data(), pending.size(), consumed);
        out.insert(out.end(), pending.begin(), pending.begin() + consumed);
        pending.erase(pending.begin(), pending.begin() + consumed);
      }
      ASSERT_EQ(r, FetchStreamParser::Result::kTail) << p.error_detail();
      out.insert(out.end(), pending.begin(), pending.begin() + p.tail_size());
      EXPECT_EQ(out, payload);
      EXPECT_GT(passed, 0u);
      EXPECT_EQ(p.records_left(), 0u);
      ASSERT_EQ(p.skeleton().responses.size(), whole.skeleton().responses.size());
      for (size_t t = 0; t < p.skeleton().responses.size(); ++t)
        EXPECT_EQ(p.skeleton().responses[t].partitions.size(),
                  whole.skeleton().responses[t].partitions.size());
      EXPECT_EQ(p.skeleton().node_endpoints.has_value(), whole.skeleton().node_endpoints.has_value());
    }
  }
}

TEST(FetchStreamParser, KeepsErrorsHintsAndEndpointsForLearning) {
  Built b = build(16, true);
  auto payload = payload_of(b);
  FetchStreamParser p(16, payload.size());
  Fed f = feed_all(p, payload, [] { return size_t{777}; });
  ASSERT_EQ(f.result, FetchStreamParser::Result::kTail);
  const FetchResponse& s = p.skeleton();
  EXPECT_EQ(s.throttle_time_ms, 7);
  EXPECT_EQ(s.session_id, 99);
  // Only topic 0's two error partitions: successes say nothing to the view.
  ASSERT_EQ(s.responses.size(), 1u);
  ASSERT_EQ(s.responses[0].partitions.size(), 2u);
  const auto& hinted = s.responses[0].partitions[0];
  EXPECT_EQ(hinted.partition_index, 1);
  EXPECT_EQ(hinted.error_code, 6);
  ASSERT_TRUE(hinted.current_leader.has_value());
  EXPECT_EQ(hinted.current_leader->leader_id, 3);
  EXPECT_EQ(hinted.current_leader->leader_epoch, 17);
  EXPECT_EQ(s.responses[0].partitions[1].error_code, 74);
  EXPECT_FALSE(s.responses[0].partitions[1].current_leader.has_value());
  EXPECT_EQ(p.unhinted_leader_errors(), 1u);
  ASSERT_TRUE(s.node_endpoints.has_value());
  ASSERT_EQ(s.node_endpoints->size(), 2u);
  EXPECT_EQ((*s.node_endpoints)[0].host, "broker-3.internal.example");
  EXPECT_EQ((*s.node_endpoints)[1].port, 19094);
  EXPECT_EQ(p.tagged_section_size(), f.tail.size());
  // The tail is the top-level tagged fields only; everything before passed.
  EXPECT_LT(f.tail.size(), 100u);
}

TEST(FetchStreamParser, TopicIdsFromV13) {
  Built b = build(13, false);
  auto payload = payload_of(b);
  FetchStreamParser p(13, payload.size());
  Fed f = feed_all(p, payload, [] { return size_t{5}; });
  ASSERT_EQ(f.result, FetchStreamParser::Result::kTail);
  ASSERT_EQ(p.skeleton().responses.size(), 1u);
  EXPECT_EQ(p.skeleton().responses[0].topic_id[0], 1);
  EXPECT_TRUE(p.skeleton().responses[0].topic.empty());
}

TEST(FetchStreamParser, WaitsWhileBytesAreMissing) {
  Built b = build(12, false);
  auto payload = payload_of(b);
  FetchStreamParser p(12, payload.size());
  // Half of it: parsed as far as it goes, never an error, never the tail.
  std::vector<uint8_t> half(payload.begin(), payload.begin() + payload.size() / 2);
  size_t consumed = 0;
  EXPECT_EQ(p.feed(half.data(), half.size(), consumed), FetchStreamParser::Result::kNeedMore);
  EXPECT_GT(consumed, 0u);
  EXPECT_LE(consumed, half.size());
}

TEST(FetchStreamParser, StopsAtTheFrameEnd) {
  // Bytes of the next frame after this one are never consumed.
  Built b = build(11, false);
  auto payload = payload_of(b);
  auto two = payload;
  two.insert(two.end(), {0, 0, 0, 9, 1, 2, 3});
  FetchStreamParser p(11, payload.size());
  size_t consumed = 0;
  ASSERT_EQ(p.feed(two.data(), two.size(), consumed), FetchStreamParser::Result::kTail);
  EXPECT_EQ(consumed + p.tail_size(), payload.size());
}

TEST(FetchStreamParser, FrameEndingInsideAFieldIsMalformed) {
  for (int16_t v : {4, 12, 16}) {
    Built b = build(v, false);
    auto payload = payload_of(b);
    // The size prefix claims fewer bytes than the fields need: cut in the
    // middle of the last partition's fields (after its records).
    for (size_t cut : {size_t{3}, size_t{12}, payload.size() / 3, payload.size() - 1}) {
      SCOPED_TRACE("v" + std::to_string(v) + " cut " + std::to_string(cut));
      std::vector<uint8_t> part(payload.begin(), payload.begin() + cut);
      FetchStreamParser p(v, part.size());
      Fed f = feed_all(p, part, [] { return size_t{64}; });
      EXPECT_EQ(f.result, FetchStreamParser::Result::kError);
      EXPECT_FALSE(p.error().ok());
    }
  }
}

TEST(FetchStreamParser, RecordsLongerThanTheFrameAreMalformed) {
  // v4: ... Records int32 length; claim 1 GiB records in a small frame.
  Built b = build(4, false, 1, 1, 10);
  auto payload = payload_of(b);
  // Last 14 bytes: records length (4) + 10 record bytes.
  size_t len_at = payload.size() - 14;
  payload[len_at] = 0x40;
  FetchStreamParser p(4, payload.size());
  Fed f = feed_all(p, payload, [] { return size_t{1}; });
  EXPECT_EQ(f.result, FetchStreamParser::Result::kError);
  EXPECT_EQ(p.error().code, codec::Errc::kLengthOverflow);
}

TEST(FetchStreamParser, NegativeArrayCountIsMalformed) {
  Built b = build(4, false, 1, 1, 10);
  auto payload = payload_of(b);
  // v4 payload: corr(4) throttle(4) topics count (int32) at offset 8.
  payload[8] = 0xFF; payload[9] = 0xFF; payload[10] = 0xFF; payload[11] = 0xFE;
  FetchStreamParser p(4, payload.size());
  Fed f = feed_all(p, payload, [] { return size_t{100}; });
  EXPECT_EQ(f.result, FetchStreamParser::Result::kError);
}

TEST(FetchStreamParser, BadTopLevelTagsAreMalformed) {
  Built b = build(16, true);
  auto payload = payload_of(b);
  FetchStreamParser probe(16, payload.size());
  Fed f = feed_all(probe, payload, [] { return size_t{4096}; });
  ASSERT_EQ(f.result, FetchStreamParser::Result::kTail);
  // The tail starts with the field count (1): claim two fields.
  size_t tail_at = payload.size() - f.tail.size();
  ASSERT_EQ(payload[tail_at], 1);
  payload[tail_at] = 2;
  FetchStreamParser p(16, payload.size());
  Fed g = feed_all(p, payload, [] { return size_t{4096}; });
  EXPECT_EQ(g.result, FetchStreamParser::Result::kError);
}

TEST(FetchStreamParser, OversizedUnitIsRefused) {
  // A partition whose tagged fields alone pass kMaxUnitBytes: the reader
  // would have to hold them unparsed; it refuses instead.
  FetchResponse m;
  FetchResponse::FetchableTopicResponse t;
  t.topic = "x";
  FetchResponse::PartitionData part;
  std::vector<uint8_t> big(2 * FetchStreamParser::kMaxUnitBytes, 1);
  part.unknown_tagged_fields.push_back(codec::TaggedField{9, codec::Bytes{big.data(), static_cast<uint32_t>(big.size())}});
  t.partitions.push_back(part);
  m.responses.push_back(t);
  std::vector<uint8_t> frame;
  codec::ResponseHeader h;
  h.header_version = 1;
  codec::encode_frame(frame, h, m, 12);
  std::vector<uint8_t> payload(frame.begin() + 4, frame.end());
  FetchStreamParser p(12, payload.size());
  Fed f = feed_all(p, payload, [] { return size_t{65536}; });
  EXPECT_EQ(f.result, FetchStreamParser::Result::kError);
}

// ---- the same-length tail ---------------------------------------------------

std::vector<FetchResponse::NodeEndpoint> endpoints(std::vector<std::pair<int32_t, std::string>> v) {
  std::vector<FetchResponse::NodeEndpoint> out;
  for (auto& [id, host] : v) out.push_back({id, host, 9092 + id, std::nullopt, {}});
  return out;
}

// Replaces the tail of `b` (v16) with `section` and decodes the whole body
// with the generated decoder, as a client would read it.
FetchResponse decode_with_tail(const Built& b, size_t old_tail, const std::vector<uint8_t>& section) {
  std::vector<uint8_t> payload(b.frame.begin() + 4, b.frame.end() - old_tail);
  payload.insert(payload.end(), section.begin(), section.end());
  codec::ResponseHeader h;
  EXPECT_TRUE(codec::parse_response_header(payload.data(), payload.size(), 1, h).ok());
  FetchResponse m;
  codec::Status s = codec::decode_body(payload.data() + h.size, payload.size() - h.size, 16, m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

size_t tail_of(const Built& b) {
  auto payload = payload_of(b);
  FetchStreamParser p(16, payload.size());
  Fed f = feed_all(p, payload, [] { return size_t{1 << 20}; });
  return f.tail.size();
}

TEST(FetchTail, ShorterEndpointsArePaddedToTheBrokersLength) {
  Built b = build(16, true);
  size_t size = tail_of(b);
  auto eps = endpoints({{3, "gw"}, {4, "gw"}});
  FetchTailFit fit = fit_fetch_tail(eps, {}, 16, size);
  ASSERT_TRUE(fit.ok);
  EXPECT_TRUE(fit.padded);
  EXPECT_EQ(fit.dropped, 0u);
  EXPECT_EQ(fit.bytes.size(), size);
  FetchResponse m = decode_with_tail(b, size, fit.bytes);
  ASSERT_TRUE(m.node_endpoints.has_value());
  EXPECT_EQ(*m.node_endpoints, eps);
  ASSERT_EQ(m.unknown_tagged_fields.size(), 1u);
  EXPECT_EQ(m.unknown_tagged_fields[0].tag, 1u);  // a tag no Fetch version defines
}

TEST(FetchTail, EqualLengthNeedsNoPadding) {
  Built b = build(16, true);
  size_t size = tail_of(b);
  auto eps = endpoints({{3, "broker-3.internal.example"}, {4, "broker-4.internal.example"}});
  eps[0].rack = "rack-a";
  eps[0].port = 19093;
  eps[1].port = 19094;
  FetchTailFit fit = fit_fetch_tail(eps, {}, 16, size);
  ASSERT_TRUE(fit.ok);
  EXPECT_FALSE(fit.padded);
  EXPECT_EQ(fit.bytes, std::vector<uint8_t>(b.frame.end() - size, b.frame.end()));
}

TEST(FetchTail, LongerEndpointsDropFromTheEndUntilTheyFit) {
  Built b = build(16, true);
  size_t size = tail_of(b);
  std::string longer(40, 'g');
  auto eps = endpoints({{3, longer}, {4, longer}});
  FetchTailFit fit = fit_fetch_tail(eps, {}, 16, size);
  ASSERT_TRUE(fit.ok);
  EXPECT_EQ(fit.bytes.size(), size);
  EXPECT_EQ(fit.dropped, 1u);
  FetchResponse m = decode_with_tail(b, size, fit.bytes);
  ASSERT_TRUE(m.node_endpoints.has_value());
  ASSERT_EQ(m.node_endpoints->size(), 1u);
  EXPECT_EQ((*m.node_endpoints)[0].node_id, 3);
  EXPECT_EQ((*m.node_endpoints)[0].host, longer);
}

TEST(FetchTail, NothingFitsLeavesNodeEndpointsOut) {
  Built b = build(16, true);
  size_t size = tail_of(b);
  auto eps = endpoints({{3, std::string(200, 'h')}});
  FetchTailFit fit = fit_fetch_tail(eps, {}, 16, size);
  ASSERT_TRUE(fit.ok);
  EXPECT_EQ(fit.dropped, 1u);
  FetchResponse m = decode_with_tail(b, size, fit.bytes);
  // An empty list or none: either way no address the client could use.
  EXPECT_TRUE(!m.node_endpoints || m.node_endpoints->empty());
}

TEST(FetchTail, NoPaddingPastTheLargestTagABrokerSent) {
  // A broker's own tag at the top of Kafka's range leaves no tag above it:
  // the tail cannot be padded, so it does not fit (the stream then closes).
  Built b = build(16, true);
  size_t size = tail_of(b);
  static const uint8_t kByte[1] = {7};
  codec::TaggedFields others{{0x7fffffffu, codec::Bytes{kByte, 1}}};
  FetchTailFit fit = fit_fetch_tail(endpoints({{3, "gw"}}), others, 16, size + 6);
  EXPECT_FALSE(fit.padded);
  EXPECT_FALSE(fit.ok);
}

TEST(FetchTail, EveryTargetLengthIsReachable) {
  // Each size from the smallest encoding up, across the padding's one-byte
  // and two-byte length forms (payloads 127 and 128).
  auto eps = endpoints({{1, "a"}});
  codec::TaggedFields others;
  std::vector<uint8_t> blob(3, 7);
  others.push_back(codec::TaggedField{5, codec::Bytes{blob.data(), 3}});
  // Below the smallest encoding (no NodeEndpoints, the other tag: 6 bytes),
  // and one over it (padding takes at least 2), nothing fits; a broker's
  // tail with NodeEndpoints is always at least 3 bytes over.
  for (size_t size : {size_t{0}, size_t{5}, size_t{7}}) EXPECT_FALSE(fit_fetch_tail(eps, others, 16, size).ok);
  for (size_t size = 8; size < 400; ++size) {
    FetchTailFit fit = fit_fetch_tail(eps, others, 16, size);
    ASSERT_TRUE(fit.ok) << size;
    ASSERT_EQ(fit.bytes.size(), size);
    codec::Reader r(fit.bytes.data(), fit.bytes.size());
    uint32_t count = r.tagged_count();
    int64_t prev = -1;
    bool kept_other = false;
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t tag = 0, len = 0;
      ASSERT_TRUE(r.tag_header(prev, tag, len)) << size;
      prev = tag;
      r.raw(len);
      kept_other |= tag == 5;
    }
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.remaining(), 0u) << size;
    EXPECT_TRUE(kept_other) << "the broker's other tags stay";
  }
}

}  // namespace
}  // namespace epochgate::proxy
