// tests/proxy/core/served_probe_injected_test.cc: a partition whose leader
// epoch epochgate wrote in for a client that sent -1 is answered as the
// client's own request would have been: the broker's FENCED_LEADER_EPOCH or
// UNKNOWN_LEADER_EPOCH becomes NOT_LEADER_OR_FOLLOWER (clients from before
// KIP-320 know only that one), while partitions the client sent an epoch
// for, and other errors, reach it as the broker sent them.
#include <gtest/gtest.h>

#include "codec/kafka_errors.h"
#include "proxy/core/served_probe.h"

namespace epochgate::proxy {
namespace {

codec::FetchRequest fetch_of(std::initializer_list<std::pair<int32_t, int32_t>> parts) {
  codec::FetchRequest req;
  req.topics.emplace_back();
  req.topics[0].topic = "t";
  for (auto [partition, epoch] : parts) {
    req.topics[0].partitions.emplace_back();
    req.topics[0].partitions.back().partition = partition;
    req.topics[0].partitions.back().current_leader_epoch = epoch;
  }
  return req;
}

policy::PartitionDecision decided(uint32_t index, int32_t partition, policy::Verdict v,
                                  int32_t request_epoch, int32_t view_epoch) {
  policy::PartitionDecision p;
  p.topic_index = 0;
  p.partition_index = index;
  p.partition = partition;
  p.verdict = v;
  p.request_epoch = request_epoch;
  p.view_epoch = view_epoch;
  return p;
}

codec::FetchResponse answer(std::initializer_list<std::pair<int32_t, int16_t>> parts) {
  codec::FetchResponse m;
  m.responses.emplace_back();
  m.responses[0].topic = "t";
  for (auto [partition, error] : parts) {
    m.responses[0].partitions.emplace_back();
    m.responses[0].partitions.back().partition_index = partition;
    m.responses[0].partitions.back().error_code = error;
  }
  return m;
}

TEST(ServedProbeInjected, InjectedPartitionsAreRememberedWithTheEpochWrittenIn) {
  codec::FetchRequest req = fetch_of({{0, -1}, {1, 4}});
  policy::RequestDecision d;
  d.partitions = {decided(0, 0, policy::Verdict::kInject, -1, 7),
                  decided(1, 1, policy::Verdict::kPass, 4, 4)};
  auto probe = make_served_probe(req, 10, d);
  ASSERT_NE(probe, nullptr);
  ASSERT_EQ(probe->injected.size(), 1u);
  EXPECT_EQ(probe->injected[0].topic.name, "t");
  EXPECT_EQ(probe->injected[0].partition, 0);
  EXPECT_EQ(probe->injected[0].epoch, 7);
  EXPECT_TRUE(probe->partitions.empty());
}

TEST(ServedProbeInjected, NoProbeWhenNothingWasInjectedOrForwardedBelowTheView) {
  codec::FetchRequest req = fetch_of({{0, 5}});
  policy::RequestDecision d;
  d.partitions = {decided(0, 0, policy::Verdict::kPass, 5, 5)};
  EXPECT_EQ(make_served_probe(req, 10, d), nullptr);
}

TEST(ServedProbeInjected, EpochErrorsOfInjectedPartitionsBecomeNotLeaderOrFollower) {
  ServedProbe probe;
  probe.injected.push_back({policy::TopicRef{"t", {}}, 0, 7});
  probe.injected.push_back({policy::TopicRef{"t", {}}, 1, 7});
  codec::FetchResponse m = answer({{0, codec::kErrFencedLeaderEpoch},
                                   {1, codec::kErrUnknownLeaderEpoch},
                                   {2, codec::kErrFencedLeaderEpoch}});
  EXPECT_EQ(answer_injected_as_sent(probe, m, 10), 2u);
  EXPECT_EQ(m.responses[0].partitions[0].error_code, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(m.responses[0].partitions[1].error_code, codec::kErrNotLeaderOrFollower);
  // Partition 2 carried the client's own epoch: its fence is the client's.
  EXPECT_EQ(m.responses[0].partitions[2].error_code, codec::kErrFencedLeaderEpoch);
}

TEST(ServedProbeInjected, OtherErrorsAndSuccessesOfInjectedPartitionsPassUnchanged) {
  ServedProbe probe;
  probe.injected.push_back({policy::TopicRef{"t", {}}, 0, 7});
  probe.injected.push_back({policy::TopicRef{"t", {}}, 1, 7});
  codec::FetchResponse m = answer({{0, 0}, {1, codec::kErrUnknownTopicOrPartition}});
  EXPECT_EQ(answer_injected_as_sent(probe, m, 10), 0u);
  EXPECT_EQ(m.responses[0].partitions[0].error_code, 0);
  EXPECT_EQ(m.responses[0].partitions[1].error_code, codec::kErrUnknownTopicOrPartition);
}

TEST(ServedProbeInjected, ListOffsetsAnswersAreTranslatedTheSameWay) {
  ServedProbe probe;
  probe.injected.push_back({policy::TopicRef{"t", {}}, 3, 2});
  codec::ListOffsetsResponse m;
  m.topics.emplace_back();
  m.topics[0].name = "t";
  m.topics[0].partitions.emplace_back();
  m.topics[0].partitions[0].partition_index = 3;
  m.topics[0].partitions[0].error_code = codec::kErrFencedLeaderEpoch;
  EXPECT_EQ(answer_injected_as_sent(probe, m, 4), 1u);
  EXPECT_EQ(m.topics[0].partitions[0].error_code, codec::kErrNotLeaderOrFollower);
}

}  // namespace
}  // namespace epochgate::proxy
