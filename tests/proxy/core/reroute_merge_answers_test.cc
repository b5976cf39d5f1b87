// tests/proxy/core/reroute_merge_answers_test.cc: the merge step of a
// rerouted Produce (RerouteState::merge_answers, finish_rerouted): the
// leaders' partition answers take the place of epochgate's own
// NOT_LEADER_OR_FOLLOWER answers in the decoded response, in the request's
// partition order, and the response is encoded once when every part is in;
// with nothing to merge and nothing changed, the kept bytes go as they are.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "codec/header.h"
#include "codec/kafka_errors.h"
#include "codec/message_io.h"
#include "proxy/core/in_flight_request.h"
#include "proxy/core/reroute_state.h"

namespace epochgate::proxy {
namespace {

using Partition = codec::ProduceResponse::PartitionProduceResponse;

constexpr int16_t kVersion = 10;

Partition partition(int32_t index, int16_t error, int64_t base_offset = -1) {
  Partition p;
  p.index = index;
  p.error_code = error;
  p.base_offset = base_offset;
  return p;
}

/// The client's response: "orders" 0 served by the broker, 1 and 2 fenced.
codec::ProduceResponse client_response() {
  codec::ProduceResponse m;
  auto& t = m.responses.emplace_back();
  t.name = "orders";
  t.partition_responses.push_back(partition(0, 0, 100));
  t.partition_responses.push_back(partition(1, codec::kErrNotLeaderOrFollower));
  t.partition_responses.push_back(partition(2, codec::kErrNotLeaderOrFollower));
  m.throttle_time_ms = 5;
  return m;
}

/// A state whose plan reroutes partitions 1 and 2 of "orders" to node 3.
std::shared_ptr<RerouteState> state_for_partitions_1_and_2() {
  auto st = std::make_shared<RerouteState>();
  st->plan = std::make_shared<ReroutePlan>();
  for (int32_t n : {1, 2}) {
    RerouteTargetPart t;
    t.topic = "orders";
    t.partition = n;
    t.leader = 3;
    st->plan->targets.push_back(t);
  }
  st->answers.resize(2);
  return st;
}

std::vector<uint8_t> encode(const codec::ProduceResponse& m, int32_t corr) {
  codec::ResponseHeader h;
  h.correlation_id = corr;
  h.header_version = codec::response_header_version(codec::kProduce, kVersion);
  std::vector<uint8_t> out;
  codec::encode_frame(out, h, m, kVersion);
  return out;
}

codec::ProduceResponse decode(const std::vector<uint8_t>& frame) {
  codec::ResponseHeader h;
  EXPECT_TRUE(codec::parse_response_header(frame.data() + 4, frame.size() - 4,
                                           codec::response_header_version(0, kVersion), h)
                  .ok());
  codec::ProduceResponse m;
  codec::Bytes trailing;
  EXPECT_TRUE(codec::decode_body_allow_trailing(frame.data() + 4 + h.size,
                                                frame.size() - 4 - h.size, kVersion, m, trailing)
                  .ok());
  return m;
}

TEST(RerouteMergeAnswers, LeadersAnswersReplaceTheLocalOnesInRequestOrder) {
  auto st = state_for_partitions_1_and_2();
  st->answers[1] = partition(2, 0, 700);  // only partition 2's leader answered
  st->throttle_time_ms = 9;
  codec::ProduceResponse::NodeEndpoint n;
  n.node_id = 3;
  n.host = "epochgate";
  n.port = 9093;
  st->endpoints.push_back(n);
  codec::ProduceResponse m = client_response();
  ASSERT_TRUE(st->merge_answers(m));
  const auto& parts = m.responses.at(0).partition_responses;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].base_offset, 100) << "the broker's partition stays";
  EXPECT_EQ(parts[1].error_code, codec::kErrNotLeaderOrFollower)
      << "no answer: the local one stays";
  EXPECT_EQ(parts[2].error_code, 0);
  EXPECT_EQ(parts[2].base_offset, 700);
  EXPECT_EQ(m.throttle_time_ms, 9) << "the larger throttle";
  ASSERT_TRUE(m.node_endpoints.has_value());
  ASSERT_EQ(m.node_endpoints->size(), 1u);
  EXPECT_EQ(m.node_endpoints->at(0).port, 9093);
}

TEST(RerouteMergeAnswers, NothingAnsweredChangesNothing) {
  auto st = state_for_partitions_1_and_2();
  codec::ProduceResponse m = client_response();
  EXPECT_FALSE(st->merge_answers(m));
  EXPECT_EQ(m, client_response());
}

TEST(RerouteMergeAnswers, FinishEncodesTheDecodedResponseOnceWhenEveryPartIsIn) {
  auto st = state_for_partitions_1_and_2();
  InFlightRequest e;
  e.correlation_id = 42;
  e.api_key = codec::kProduce;
  e.api_version = kVersion;
  e.reroute = st;
  e.response = encode(client_response(), 42);
  st->response = client_response();
  st->response_header.correlation_id = 42;
  st->response_header.header_version = codec::response_header_version(0, kVersion);
  const int part = e.add_part(RequestPart::Source::kReroute);
  st->answers[0] = partition(1, 0, 500);
  EXPECT_FALSE(finish_rerouted(e)) << "a part is still out";
  e.answer_part(static_cast<size_t>(part));
  ASSERT_TRUE(finish_rerouted(e));
  EXPECT_TRUE(e.ready);
  EXPECT_FALSE(st->response.has_value()) << "encoded once, then let go";
  codec::ProduceResponse got = decode(e.response);
  EXPECT_EQ(got.responses.at(0).partition_responses.at(1).base_offset, 500);
}

TEST(RerouteMergeAnswers, FinishKeepsTheBytesWhenNothingMergedOrChanged) {
  auto st = state_for_partitions_1_and_2();
  InFlightRequest e;
  e.api_key = codec::kProduce;
  e.api_version = kVersion;
  e.reroute = st;
  e.response = {0, 0, 0, 1, 0xAB};  // not even a Produce: never decoded again
  st->response = client_response();
  ASSERT_TRUE(finish_rerouted(e));
  EXPECT_EQ(e.response, (std::vector<uint8_t>{0, 0, 0, 1, 0xAB}));
}

}  // namespace
}  // namespace epochgate::proxy
