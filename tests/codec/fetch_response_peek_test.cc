// tests/codec/fetch_response_peek_test.cc: the in-place walk of a
// FetchResponse accepts exactly the error-free, untagged answers in every
// version (against the codec's encoder), records, aborted transactions and
// null records included, and refuses top-level and partition errors,
// diverging epochs, hints, snapshot ids, NodeEndpoints, unknown tags and
// truncated bodies.
#include "codec/fetch_response_peek.h"

#include <gtest/gtest.h>

#include <vector>

#include "codec/messages/fetch_response.h"
#include "codec/writer.h"

namespace epochgate::codec {
namespace {

const uint8_t kRecords[] = {9, 8, 7, 6, 5, 4, 3, 2, 1};

FetchResponse two_topics() {
  FetchResponse m;
  for (const char* name : {"orders", "a-much-longer-topic-name-than-sso"}) {
    FetchResponse::FetchableTopicResponse t;
    t.topic = name;
    t.topic_id[0] = static_cast<uint8_t>(name[0]);
    for (int32_t i : {0, 7}) {
      FetchResponse::PartitionData p;
      p.partition_index = i;
      p.high_watermark = 1000 + i;
      p.records = Bytes{kRecords, sizeof kRecords, false};
      t.partitions.push_back(p);
    }
    m.responses.push_back(t);
  }
  // One partition with aborted transactions, one with null records.
  m.responses[0].partitions[1].aborted_transactions->push_back({42, 7, {}});
  m.responses[1].partitions[0].records = Bytes{nullptr, 0, true};
  m.throttle_time_ms = 5;
  m.session_id = 77;
  return m;
}

bool is_clean(const FetchResponse& m, int16_t version) {
  std::vector<uint8_t> b;
  Writer w(b);
  m.encode(w, version);
  return fetch_response_is_clean(b.data(), b.size(), version);
}

TEST(CleanFetchResponse, ErrorFreeAnswersInEveryVersionAreClean) {
  for (int16_t v = FetchResponse::kMinVersion; v <= FetchResponse::kMaxVersion; ++v)
    EXPECT_TRUE(is_clean(two_topics(), v)) << "v" << v;
}

TEST(CleanFetchResponse, AnErrorCodeIsNotClean) {
  FetchResponse top = two_topics();
  top.error_code = 71;  // INVALID_FETCH_SESSION_EPOCH
  FetchResponse partition = two_topics();
  partition.responses[1].partitions[1].error_code = 74;  // FENCED_LEADER_EPOCH
  for (int16_t v : {4, 7, 11, 12, 13, 16}) {
    if (v >= 7) {
      EXPECT_FALSE(is_clean(top, v)) << "top v" << v;
    }
    EXPECT_FALSE(is_clean(partition, v)) << "partition v" << v;
  }
}

TEST(CleanFetchResponse, ATaggedFieldOrNodeEndpointsAreNotClean) {
  FetchResponse diverging = two_topics();
  diverging.responses[0].partitions[0].diverging_epoch = FetchResponse::EpochEndOffset{3, 10, {}};
  FetchResponse hinted = two_topics();
  hinted.responses[0].partitions[1].current_leader = FetchResponse::LeaderIdAndEpoch{2, 9, {}};
  FetchResponse snapshot = two_topics();
  snapshot.responses[1].partitions[1].snapshot_id.emplace();
  FetchResponse with_nodes = two_topics();
  with_nodes.node_endpoints.emplace();
  with_nodes.node_endpoints->push_back({});
  static const uint8_t kPayload[] = {1, 2};
  FetchResponse unknown = two_topics();
  unknown.responses[1].unknown_tagged_fields.push_back({5, Bytes{kPayload, 2, false}});
  for (int16_t v : {12, 13, 16, 17}) {
    EXPECT_FALSE(is_clean(diverging, v)) << "diverging epoch v" << v;
    EXPECT_FALSE(is_clean(hinted, v)) << "hint v" << v;
    EXPECT_FALSE(is_clean(snapshot, v)) << "snapshot id v" << v;
    EXPECT_FALSE(is_clean(unknown, v)) << "unknown tag v" << v;
    if (v >= 16) {
      EXPECT_FALSE(is_clean(with_nodes, v)) << "node endpoints v" << v;
    }
  }
}

TEST(CleanFetchResponse, TruncatedBodiesAreNotClean) {
  for (int16_t v : {4, 11, 12, 13, 16}) {
    std::vector<uint8_t> b;
    Writer w(b);
    two_topics().encode(w, v);
    for (size_t cut = 0; cut < b.size(); ++cut)
      EXPECT_FALSE(fetch_response_is_clean(b.data(), cut, v)) << "v" << v << " cut at " << cut;
  }
}

}  // namespace
}  // namespace epochgate::codec
