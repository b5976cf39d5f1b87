// tests/proxy/fencing/policy_fencing_budget_test.cc: PolicyFencing counts a decoded
// request against the buffer budget for as long as it keeps it (a split
// request's context, until the broker's answer is merged), returns the bytes
// when it lets go, and refuses a request over limits.max_partitions_per_request
// with its own close reason.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/all.h"
#include "config/config.h"
#include "policy/metadata_view.h"
#include "proxy/fencing/policy_fencing.h"
#include "proxy/net/buffer_budget.h"

namespace epochgate::proxy {
namespace {

class NoEndpoints : public policy::EndpointResolver {
 public:
  std::optional<policy::AdvertisedEndpoint> advertised(int32_t) const override {
    return std::nullopt;
  }
};

// The view: topic "t" with partitions 0..1, partition 0 led by node 1 and
// partition 1 by node 2, both at leader epoch 5.
void learn_two_leaders(PolicyFencing& f) {
  codec::MetadataResponse m;
  for (int32_t node : {1, 2}) {
    codec::MetadataResponse::MetadataResponseBroker b;
    b.node_id = node;
    b.host = "127.0.0.1";
    b.port = 9000 + node;
    m.brokers.push_back(b);
  }
  codec::MetadataResponse::MetadataResponseTopic t;
  t.name = "t";
  t.topic_id[0] = 7;
  for (int32_t p : {0, 1}) {
    codec::MetadataResponse::MetadataResponsePartition part;
    part.partition_index = p;
    part.leader_id = p + 1;
    part.leader_epoch = 5;
    part.replica_nodes = {1, 2};
    part.isr_nodes = {1, 2};
    t.partitions.push_back(part);
  }
  m.topics.push_back(t);
  f.learn_metadata(m, 12);
}

// Produce v9 to topic "t" naming `partitions` partition entries (0, 1, 0, 1, ...;
// all 0 with `spread` 1).
std::vector<uint8_t> produce_frame(int partitions, int spread = 2) {
  codec::ProduceRequest req;
  req.acks = 1;
  req.timeout_ms = 1000;
  codec::ProduceRequest::TopicProduceData td;
  td.name = "t";
  for (int i = 0; i < partitions; ++i) {
    codec::ProduceRequest::PartitionProduceData pd;
    pd.index = i % spread;
    pd.records = codec::Bytes::null();
    td.partition_data.push_back(pd);
  }
  req.topic_data.push_back(td);
  codec::RequestHeader h;
  h.api_key = codec::kProduce;
  h.api_version = 9;
  h.correlation_id = 42;
  h.client_id = "budget-test";
  std::vector<uint8_t> out;
  codec::encode_frame(out, h, req, 9);
  return out;
}

struct Rig {
  policy::MetadataView view;
  NoEndpoints endpoints;
  PolicyFencing fencing{view, endpoints, nullptr};
  BufferBudget budget{1 << 20};

  explicit Rig(uint32_t max_partitions = 100000) {
    auto c = std::make_shared<config::Config>();
    c->limits.max_partitions_per_request = max_partitions;
    fencing.set_config(c);
    learn_two_leaders(fencing);
  }
  FencingHooks::RequestPlan plan(std::vector<uint8_t> frame, int32_t node) {
    // As the session's request path reads it: the header once, then the plan.
    RequestFrame f;
    f.data = frame.data() + 4;
    f.size = frame.size() - 4;
    EXPECT_TRUE(codec::parse_request_header(f.data, f.size, f.header).ok());
    f.header_parsed = true;
    f.decided = true;
    f.upstream_version = f.header.api_version;
    FencingHooks::RequestInput in;
    in.node_id = node;
    in.frame = &f;
    in.budget = &budget;
    return fencing.plan_request(in);
  }
};

TEST(PolicyFencingBudget, SplitRequestHoldsItsDecodedBytesUntilReleased) {
  Rig rig;
  // On node 1's listener: partition 0 is served here, partition 1 is not.
  auto plan = rig.plan(produce_frame(2), 1);
  ASSERT_EQ(plan.action, FencingHooks::RequestPlan::Action::kForwardRewritten);
  ASSERT_NE(plan.context, nullptr) << "a split keeps its decoded request";
  // The decoded request holds at least the topic and its two partitions.
  EXPECT_GE(rig.budget.used(),
            static_cast<int64_t>(sizeof(codec::ProduceRequest::TopicProduceData) +
                                 2 * sizeof(codec::ProduceRequest::PartitionProduceData)));
  plan.context.reset();  // the broker answered: the context goes
  EXPECT_EQ(rig.budget.used(), 0);
}

TEST(PolicyFencingBudget, ForwardedRequestReturnsItsBytesAtOnce) {
  Rig rig;
  auto plan = rig.plan(produce_frame(1), 1);  // partition 0 only, on its leader
  EXPECT_EQ(plan.action, FencingHooks::RequestPlan::Action::kForward);
  EXPECT_EQ(rig.budget.used(), 0);
}

TEST(PolicyFencingBudget, LargeProduceForwardedAsIsKeepsNothing) {
  Rig rig;
  // 5,000 entries of partition 0 on its leader: decided on the fields read
  // in place, forwarded as they are, nothing kept or charged afterwards.
  auto plan = rig.plan(produce_frame(5000, 1), 1);
  EXPECT_EQ(plan.action, FencingHooks::RequestPlan::Action::kForward);
  EXPECT_EQ(plan.context, nullptr);
  EXPECT_TRUE(plan.frame.empty());
  EXPECT_EQ(rig.budget.used(), 0);
  // The same to node 2 is fenced throughout: answered locally from the full decode.
  auto fenced = rig.plan(produce_frame(5000, 1), 2);
  EXPECT_EQ(fenced.action, FencingHooks::RequestPlan::Action::kAnswerLocally);
  EXPECT_FALSE(fenced.frame.empty());
  EXPECT_EQ(rig.budget.used(), 0);
}

TEST(PolicyFencingBudget, OverTheCapClosesWithItsOwnReason) {
  Rig rig(10);  // 1 topic + 9 partitions fit, 1 + 10 do not
  auto at = rig.plan(produce_frame(9), 1);
  EXPECT_NE(at.action, FencingHooks::RequestPlan::Action::kClose);
  at.context.reset();
  auto over = rig.plan(produce_frame(10), 1);
  ASSERT_EQ(over.action, FencingHooks::RequestPlan::Action::kClose);
  EXPECT_TRUE(over.malformed);
  EXPECT_EQ(over.close_reason, metrics::CloseReason::kTooManyPartitions);
  EXPECT_NE(over.reason.find("limits.max_partitions_per_request (10)"), std::string::npos)
      << over.reason;
  EXPECT_EQ(rig.budget.used(), 0);
}

}  // namespace
}  // namespace epochgate::proxy
