// tests/policy/reroute_target_test.cc: which partitions of a decided Produce
// request are rerouted (policy/reroute_target.h): only not-leader fences in
// enforce mode, on topics whose rule reroutes, with a leader to send to.
#include "policy/reroute_target.h"
#include "codec/kafka_errors.h"

#include <gtest/gtest.h>

namespace epochgate::policy {
namespace {

codec::ProduceRequest request(std::vector<std::pair<std::string, int>> parts) {
  codec::ProduceRequest r;
  r.acks = -1;
  for (const auto& [topic, n] : parts) {
    auto& t = r.topic_data.emplace_back();
    t.name = topic;
    for (int i = 0; i < n; ++i) t.partition_data.emplace_back().index = i;
  }
  return r;
}

// One decision per partition of `req`, all kPass unless changed.
RequestDecision decision(const codec::ProduceRequest& req) {
  RequestDecision d;
  d.api_key = 0;
  for (uint32_t ti = 0; ti < req.topic_data.size(); ++ti) {
    d.topic_start.push_back(static_cast<uint32_t>(d.partitions.size()));
    for (uint32_t pi = 0; pi < req.topic_data[ti].partition_data.size(); ++pi) {
      PartitionDecision& p = d.partitions.emplace_back();
      p.topic_index = ti;
      p.partition_index = pi;
      p.partition = static_cast<int32_t>(pi);
    }
  }
  d.topic_start.push_back(static_cast<uint32_t>(d.partitions.size()));
  return d;
}

void fence_not_leader(PartitionDecision& p, int32_t leader, int32_t epoch,
                      config::Mode mode = config::Mode::kEnforce) {
  p.verdict = Verdict::kFence;
  p.reason = Reason::kNotLeader;
  p.error_code = codec::kErrNotLeaderOrFollower;
  p.mode = mode;
  p.hint_leader = leader;
  p.hint_epoch = epoch;
}

ModeResolver modes(const std::string& pattern, config::Mode mode = config::Mode::kEnforce) {
  config::PolicyConfig c;
  config::PolicyRule r;
  r.topics = pattern;
  r.mode = mode;
  r.reroute = true;
  c.rules.push_back(r);
  return ModeResolver(c);
}

TEST(RerouteTarget, NotLeaderFenceOnAReroutingTopicGoesToTheViewsLeader) {
  auto req = request({{"orders", 3}});
  auto d = decision(req);
  fence_not_leader(d.partitions[2], 2, 7);
  MetadataSnapshot view;
  RerouteTargets t = reroute_targets(req, 9, d, modes("ord*"), view, 1);
  ASSERT_EQ(t.partitions.size(), 1u);
  EXPECT_EQ(t.partitions[0].partition_index, 2u);
  EXPECT_EQ(t.partitions[0].leader, 2);
  EXPECT_EQ(t.partitions[0].leader_epoch, 7);
  EXPECT_EQ(t.observed, 0u);
}

TEST(RerouteTarget, TopicsWithoutRerouteAndOtherFencesStayLocal) {
  auto req = request({{"orders", 2}, {"audit", 2}});
  auto d = decision(req);
  fence_not_leader(d.partitions[2], 2, 7);  // audit: no reroute rule
  d.partitions[0].verdict = Verdict::kFence;  // orders p0: a stale epoch, not a leader move
  d.partitions[0].reason = Reason::kStaleEpoch;
  d.partitions[0].hint_leader = 2;
  d.partitions[0].hint_epoch = 7;
  fence_not_leader(d.partitions[1], -1, -1);  // no leader known: nothing to send to
  MetadataSnapshot view;
  RerouteTargets t = reroute_targets(req, 9, d, modes("orders"), view, 1);
  EXPECT_TRUE(t.partitions.empty());
}

TEST(RerouteTarget, ObserveModeOnlyCounts) {
  auto req = request({{"orders", 1}});
  auto d = decision(req);
  fence_not_leader(d.partitions[0], 2, 7, config::Mode::kObserve);
  MetadataSnapshot view;
  RerouteTargets t = reroute_targets(req, 9, d, modes("orders", config::Mode::kObserve), view, 1);
  EXPECT_TRUE(t.partitions.empty());
  EXPECT_EQ(t.observed, 1u);
}

TEST(RerouteTarget, NeverBackToTheBrokerItCameFrom) {
  auto req = request({{"orders", 1}});
  auto d = decision(req);
  fence_not_leader(d.partitions[0], 1, 7);
  MetadataSnapshot view;
  EXPECT_TRUE(reroute_targets(req, 9, d, modes("*"), view, 1).partitions.empty());
}

TEST(RerouteTarget, OnlyRequestsWhollyOnReroutingTopicsSkipTheRefreshHold) {
  MetadataSnapshot view;
  EXPECT_TRUE(all_topics_reroute(request({{"orders", 1}}), 9, modes("ord*"), view));
  EXPECT_FALSE(all_topics_reroute(request({{"orders", 1}, {"audit", 1}}), 9, modes("ord*"), view));
  config::PolicyConfig none;
  EXPECT_FALSE(all_topics_reroute(request({{"orders", 1}}), 9, ModeResolver(none), view));
}

}  // namespace
}  // namespace epochgate::policy
