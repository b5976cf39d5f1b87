// tests/codec/produce_response_peek_test.cc: the in-place walk of a
// ProduceResponse accepts exactly the all-success, untagged answers in every
// layout (against the codec's encoder), names each partition, and refuses
// errors, record errors, messages, hints, NodeEndpoints, unknown tags and
// truncated bodies.
#include "codec/produce_response_peek.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codec/messages/produce_response.h"
#include "codec/writer.h"

namespace epochgate::codec {
namespace {

ProduceResponse two_topics() {
  ProduceResponse m;
  for (const char* name : {"orders", "a-much-longer-topic-name-than-sso"}) {
    ProduceResponse::TopicProduceResponse t;
    t.name = name;
    t.topic_id[0] = static_cast<uint8_t>(name[0]);
    for (int32_t i : {0, 7}) {
      ProduceResponse::PartitionProduceResponse p;
      p.index = i;
      p.base_offset = 1000 + i;
      t.partition_responses.push_back(p);
    }
    m.responses.push_back(t);
  }
  m.throttle_time_ms = 5;
  return m;
}

std::vector<uint8_t> body_of(const ProduceResponse& m, int16_t version) {
  std::vector<uint8_t> b;
  Writer w(b);
  m.encode(w, version);
  return b;
}

std::vector<std::string> walk(const std::vector<uint8_t>& b, int16_t version, bool* clean) {
  std::vector<std::string> seen;
  *clean = peek_clean_produce_response(b.data(), b.size(), version,
                                       [&](const CleanProducePartition& p) {
                                         std::string t = p.topic.empty()
                                                             ? "id" + std::to_string(p.topic_id[0])
                                                             : std::string(p.topic);
                                         seen.push_back(t + "/" + std::to_string(p.partition));
                                       });
  return seen;
}

bool is_clean(const ProduceResponse& m, int16_t version) {
  bool clean = false;
  walk(body_of(m, version), version, &clean);
  return clean;
}

TEST(CleanProduceResponse, AllSuccessesInEveryVersionNameEachPartition) {
  for (int16_t v = ProduceResponse::kMinVersion; v <= ProduceResponse::kMaxVersion; ++v) {
    bool clean = false;
    auto seen = walk(body_of(two_topics(), v), v, &clean);
    EXPECT_TRUE(clean) << "v" << v;
    const std::string a = v >= 13 ? "id111" : "orders";
    const std::string b = v >= 13 ? "id97" : "a-much-longer-topic-name-than-sso";
    EXPECT_EQ(seen, (std::vector<std::string>{a + "/0", a + "/7", b + "/0", b + "/7"}))
        << "v" << v;
  }
}

TEST(CleanProduceResponse, AnErrorCodeIsNotClean) {
  ProduceResponse m = two_topics();
  m.responses[1].partition_responses[1].error_code = 6;  // NOT_LEADER_OR_FOLLOWER
  for (int16_t v : {3, 8, 9, 10, 12, 13}) EXPECT_FALSE(is_clean(m, v)) << "v" << v;
}

TEST(CleanProduceResponse, RecordErrorsOrAnErrorMessageAreNotClean) {
  ProduceResponse with_errors = two_topics();
  with_errors.responses[0].partition_responses[0].record_errors.push_back({});
  ProduceResponse with_message = two_topics();
  with_message.responses[0].partition_responses[0].error_message = std::string("");
  for (int16_t v : {8, 9, 11}) {
    EXPECT_FALSE(is_clean(with_errors, v)) << "record errors v" << v;
    EXPECT_FALSE(is_clean(with_message, v)) << "message v" << v;
  }
}

TEST(CleanProduceResponse, AHintOrNodeEndpointsAreNotClean) {
  ProduceResponse hinted = two_topics();
  hinted.responses[0].partition_responses[1].current_leader =
      ProduceResponse::LeaderIdAndEpoch{2, 9, {}};
  ProduceResponse with_nodes = two_topics();
  with_nodes.node_endpoints.emplace();
  with_nodes.node_endpoints->push_back({});
  for (int16_t v : {10, 11, 12, 13}) {
    EXPECT_FALSE(is_clean(hinted, v)) << "hint v" << v;
    EXPECT_FALSE(is_clean(with_nodes, v)) << "node endpoints v" << v;
  }
}

TEST(CleanProduceResponse, AnUnknownTaggedFieldIsNotClean) {
  static const uint8_t kPayload[] = {1, 2};
  ProduceResponse m = two_topics();
  m.responses[1].unknown_tagged_fields.push_back({5, Bytes{kPayload, 2, false}});
  EXPECT_FALSE(is_clean(m, 9));
}

TEST(CleanProduceResponse, TruncatedBodiesAreNotClean) {
  for (int16_t v : {3, 9, 12, 13}) {
    auto b = body_of(two_topics(), v);
    for (size_t cut = 0; cut < b.size(); ++cut) {
      std::vector<uint8_t> part(b.begin(), b.begin() + static_cast<long>(cut));
      bool clean = true;
      walk(part, v, &clean);
      EXPECT_FALSE(clean) << "v" << v << " cut at " << cut;
    }
  }
}

}  // namespace
}  // namespace epochgate::codec
