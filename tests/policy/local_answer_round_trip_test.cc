// tests/policy/local_answer_round_trip_test.cc: for every API the policy
// answers, a request frame is encoded with the generated encoder, decoded as
// a session would, decided, answered locally, and the answer encoded and
// decoded again at the client's version. Checks the hint fields per version
// (Produce v9/v10, Fetch v15/v16, share APIs always) and docs/architecture.md invariant 5
// on every answer: hint epoch strictly newer, hinted node in NodeEndpoints
// with epochgate's address, never an upstream one.
#include <gtest/gtest.h>

#include "policy_test_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

using testing::orders;
using testing::payments;

constexpr uint64_t kNow = testing::kLearnedAt + 1000;

/// Encodes `req` as a whole request frame, then splits and decodes it again.
template <class Request>
Request through_the_wire(const Request& req, int16_t version) {
  codec::RequestHeader h;
  h.api_key = Request::kApiKey;
  h.api_version = version;
  h.correlation_id = 4242;
  h.client_id = std::string_view("policy-test");
  std::vector<uint8_t> frame;
  codec::encode_frame(frame, h, req, version);
  EXPECT_GE(frame.size(), 4u);
  const uint8_t* payload = frame.data() + 4;
  const size_t len = frame.size() - 4;
  codec::RequestHeader parsed;
  EXPECT_TRUE(codec::parse_request_header(payload, len, parsed).ok());
  EXPECT_EQ(parsed.api_key, Request::kApiKey);
  EXPECT_EQ(parsed.api_version, version);
  Request out;
  codec::Status s = codec::decode_body(payload + parsed.size, len - parsed.size, version, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

/// Encodes then decodes a response body; the result must equal the input.
template <class Response>
Response reencoded(const Response& resp, int16_t version) {
  auto bytes = testing::encode_body(resp, version);
  auto back = testing::decode_body<Response>(bytes, version);
  EXPECT_TRUE(back == resp) << Response::kName << " v" << version << " changed on the wire";
  return back;
}

class LocalAnswers : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::learn_standard_cluster(view_);
    snap_ = view_.snapshot();
  }
  template <class Request>
  RequestDecision decide_at(const Request& req, int16_t version, int32_t target) {
    DecideContext ctx{*snap_, policy_, target, kNow, true};
    return decide(req, version, ctx);
  }
  MetadataView view_;
  std::shared_ptr<const MetadataSnapshot> snap_;
  CompiledPolicy policy_ = testing::default_policy();
  testing::FakeEndpoints endpoints_;
};

TEST_F(LocalAnswers, ProduceEveryVersionHintsFromV10) {
  for (int16_t v = 0; v <= 13; ++v) {
    SCOPED_TRACE("Produce v" + std::to_string(v));
    auto req = through_the_wire(testing::produce_request(v, {orders({{0}, {2}})}), v);
    auto d = decide_at(req, v, 2);
    ASSERT_EQ(d.action, Action::kAnswerLocally);
    AnswerStats st;
    auto resp = reencoded(build_local_response(req, v, d, *snap_, endpoints_, &st), v);
    ASSERT_EQ(resp.responses.size(), 1u);
    if (v >= 13) {
      EXPECT_EQ(resp.responses[0].topic_id, testing::uuid(1));
    } else {
      EXPECT_EQ(resp.responses[0].name, "orders");
    }
    const auto& parts = resp.responses[0].partition_responses;
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].index, 0);
    EXPECT_EQ(parts[1].index, 2);
    for (const auto& p : parts) {
      EXPECT_EQ(p.error_code, codec::kErrNotLeaderOrFollower);
      EXPECT_EQ(p.base_offset, -1);
    }
    EXPECT_EQ(resp.throttle_time_ms, 0);
    if (v >= 10) {
      ASSERT_TRUE(parts[0].current_leader && parts[1].current_leader);
      EXPECT_EQ(parts[0].current_leader->leader_id, 1);
      EXPECT_EQ(parts[0].current_leader->leader_epoch, 5);
      EXPECT_EQ(parts[1].current_leader->leader_id, 3);
      EXPECT_EQ(parts[1].current_leader->leader_epoch, 9);
      ASSERT_TRUE(resp.node_endpoints);
      EXPECT_EQ(resp.node_endpoints->size(), 2u);
      testing::expect_endpoints_cover(*resp.node_endpoints, 1);
      testing::expect_endpoints_cover(*resp.node_endpoints, 3);
      EXPECT_EQ(st.hints, 2u);
      // Rack comes from the view (racks are not addresses).
      EXPECT_EQ((*resp.node_endpoints)[0].rack, std::optional<std::string>("rack-1"));
    } else {
      EXPECT_FALSE(parts[0].current_leader);
      EXPECT_FALSE(resp.node_endpoints);
      EXPECT_EQ(st.hints, 0u);
    }
  }
}

TEST_F(LocalAnswers, FetchEveryVersionHintsFromV16) {
  for (int16_t v = 9; v <= 18; ++v) {
    SCOPED_TRACE("Fetch v" + std::to_string(v));
    auto req = through_the_wire(testing::fetch_request(v, {orders({{0, 4}, {1, 2}})}), v);
    auto d = decide_at(req, v, 1);
    ASSERT_EQ(d.action, Action::kAnswerLocally);
    auto resp = reencoded(build_local_response(req, v, d, *snap_, endpoints_), v);
    EXPECT_EQ(resp.error_code, 0);
    EXPECT_EQ(resp.session_id, 0);
    ASSERT_EQ(resp.responses.size(), 1u);
    const auto& parts = resp.responses[0].partitions;
    ASSERT_EQ(parts.size(), 2u);
    for (size_t i = 0; i < parts.size(); ++i) {
      EXPECT_EQ(parts[i].error_code, codec::kErrFencedLeaderEpoch);
      EXPECT_EQ(parts[i].high_watermark, -1);
      EXPECT_FALSE(parts[i].records.is_null);
      EXPECT_EQ(parts[i].records.size, 0u);
      if (v >= 16) {
        ASSERT_TRUE(parts[i].current_leader);
        EXPECT_GT(parts[i].current_leader->leader_epoch,
                  req.topics[0].partitions[i].current_leader_epoch);
      } else {
        EXPECT_FALSE(parts[i].current_leader) << "no NodeEndpoints before v16: no hint";
      }
    }
    if (v >= 16) {
      ASSERT_TRUE(resp.node_endpoints);
      testing::expect_endpoints_cover(*resp.node_endpoints, 1);
      testing::expect_endpoints_cover(*resp.node_endpoints, 2);
    } else {
      EXPECT_FALSE(resp.node_endpoints);
    }
  }
}

TEST_F(LocalAnswers, FetchNotReplicaOldVersionsStillAnswer) {
  for (int16_t v = 4; v <= 8; ++v) {
    auto req = through_the_wire(testing::fetch_request(v, {orders({{0, -1}})}), v);
    auto d = decide_at(req, v, 4);
    ASSERT_EQ(d.action, Action::kAnswerLocally);
    auto resp = reencoded(build_local_response(req, v, d, *snap_, endpoints_), v);
    EXPECT_EQ(resp.responses[0].partitions[0].error_code, codec::kErrNotLeaderOrFollower);
  }
}

TEST_F(LocalAnswers, ListOffsetsAndOffsetForLeaderEpoch) {
  for (int16_t v = 4; v <= 11; ++v) {
    auto req = through_the_wire(testing::list_offsets_request(v, {orders({{1, 3}})}), v);
    auto d = decide_at(req, v, 2);
    ASSERT_EQ(d.action, Action::kAnswerLocally);
    auto resp = reencoded(build_local_response(req, v, d, *snap_, endpoints_), v);
    ASSERT_EQ(resp.topics.size(), 1u);
    EXPECT_EQ(resp.topics[0].name, "orders");
    EXPECT_EQ(resp.topics[0].partitions[0].error_code, codec::kErrFencedLeaderEpoch);
    EXPECT_EQ(resp.topics[0].partitions[0].offset, -1);
  }
  for (int16_t v = 2; v <= 4; ++v) {
    auto req = through_the_wire(testing::offset_for_leader_epoch_request(v, {orders({{2, 1}})}), v);
    auto d = decide_at(req, v, 3);
    ASSERT_EQ(d.action, Action::kAnswerLocally);
    auto resp = reencoded(build_local_response(req, v, d, *snap_, endpoints_), v);
    EXPECT_EQ(resp.topics[0].partitions[0].error_code, codec::kErrFencedLeaderEpoch);
    EXPECT_EQ(resp.topics[0].partitions[0].partition, 2);
    EXPECT_EQ(resp.topics[0].partitions[0].end_offset, -1);
  }
}

TEST_F(LocalAnswers, ShareFetchAndAcknowledgeCarryHintsAtEveryVersion) {
  for (int16_t v = 0; v <= 2; ++v) {
    SCOPED_TRACE("share v" + std::to_string(v));
    auto req = through_the_wire(testing::share_fetch_request({payments({{0}})}, true), v);
    auto d = decide_at(req, v, 3);
    // Forwarded without its partitions all the same (share_session_test.cc).
    ASSERT_EQ(d.action, Action::kSplit);
    auto resp = reencoded(build_local_response(req, v, d, *snap_, endpoints_), v);
    const auto& p = resp.responses.at(0).partitions.at(0);
    EXPECT_EQ(p.error_code, codec::kErrNotLeaderOrFollower);
    EXPECT_EQ(p.acknowledge_error_code, codec::kErrNotLeaderOrFollower) << "piggybacked acks not applied";
    EXPECT_EQ(p.current_leader.leader_id, 2);
    EXPECT_EQ(p.current_leader.leader_epoch, 3);
    testing::expect_endpoints_cover(resp.node_endpoints, 2);

    auto ack = through_the_wire(testing::share_acknowledge_request({payments({{0}})}), v);
    d = decide_at(ack, v, 4);
    auto aresp = reencoded(build_local_response(ack, v, d, *snap_, endpoints_), v);
    EXPECT_EQ(aresp.responses.at(0).partitions.at(0).error_code, codec::kErrNotLeaderOrFollower);
    EXPECT_EQ(aresp.responses.at(0).partitions.at(0).current_leader.leader_id, 2);
    testing::expect_endpoints_cover(aresp.node_endpoints, 2);
  }
}

TEST_F(LocalAnswers, NoListenerForTheLeaderMeansNoHintButStillTheError) {
  endpoints_.missing = {1};
  auto req = testing::produce_request(10, {orders({{0}, {2}})});
  auto d = decide_at(req, 10, 2);
  AnswerStats st;
  auto resp = reencoded(build_local_response(req, 10, d, *snap_, endpoints_, &st), 10);
  const auto& parts = resp.responses[0].partition_responses;
  EXPECT_EQ(parts[0].error_code, codec::kErrNotLeaderOrFollower);
  EXPECT_FALSE(parts[0].current_leader) << "node 1 has no epochgate address: no hint";
  ASSERT_TRUE(parts[1].current_leader);
  EXPECT_EQ(st.hints, 1u);
  EXPECT_EQ(st.hints_dropped, 1u);
  ASSERT_TRUE(resp.node_endpoints);
  EXPECT_EQ(resp.node_endpoints->size(), 1u);
  testing::expect_endpoints_cover(*resp.node_endpoints, 3);
}

TEST_F(LocalAnswers, PersisterAnswers) {
  auto req = through_the_wire(testing::read_state_request({orders({{0, 4}})}), 0);
  auto d = decide_at(req, 0, 1);
  ASSERT_EQ(d.action, Action::kAnswerLocally);
  auto resp = reencoded(build_local_response(req, 0, d, *snap_, endpoints_), 0);
  EXPECT_EQ(resp.results.at(0).topic_id, testing::uuid(1));
  EXPECT_EQ(resp.results.at(0).partitions.at(0).error_code, codec::kErrFencedLeaderEpoch);
  for (int16_t v = 0; v <= 1; ++v) {
    auto w = through_the_wire(testing::write_state_request({orders({{1, 6}})}), v);
    d = decide_at(w, v, 1);
    auto wr = reencoded(build_local_response(w, v, d, *snap_, endpoints_), v);
    EXPECT_EQ(wr.results.at(0).partitions.at(0).error_code, codec::kErrFencedLeaderEpoch);
  }
}

/// The view's (leader, epoch) of a partition of the standard cluster, by
/// topic name or id; {-1, -1} for anything else.
std::pair<int32_t, int32_t> view_leader(const std::string& name, const codec::Uuid& id,
                                        int32_t partition) {
  const bool orders_topic = name == "orders" || (name.empty() && id == testing::uuid(1));
  const bool payments_topic = name == "payments" || (name.empty() && id == testing::uuid(2));
  if (orders_topic && partition == 0) return {1, 5};
  if (orders_topic && partition == 1) return {2, 7};
  if (orders_topic && partition == 2) return {3, 9};
  if (payments_topic && partition == 0) return {2, 3};
  return {-1, -1};
}

TEST_F(LocalAnswers, HintInvariantHoldsOnEveryBuiltAnswer) {
  // Sweep: each API at each version, every target broker, request epochs from
  // -1 to 10: every hint written names the view's leader at the view's epoch,
  // strictly newer than the partition's request epoch (Fetch v9+ carries
  // one; Produce and ShareFetch carry none, so -1), and a node present in
  // NodeEndpoints with epochgate's address. The hints are counted, so an
  // answer builder that writes none (or too few) fails here.
  //
  // Expected counts, from the decision table and the standard cluster
  // (orders p0 L1 e5, p1 L2 e7, p2 L3 e9, all on 1,2,3; payments p0 L2 e3 on
  // 2,3,4; every node has an epochgate listener):
  // - Produce and ShareFetch fence every partition not led by the target
  //   (none on the bootstrap, target -1): 3 + 2 + 3 + 4 = 12 per request
  //   epoch, whatever that epoch, each with a hint.
  //   Produce: 12 x 12 epochs x 4 versions with hints (v10-13) = 576.
  //   ShareFetch: 12 x 12 epochs x 3 versions (v0-2) = 432.
  // - Fetch v16-18 (the versions with hints) hints a stale epoch 0 <= e <
  //   e_v on every target: over e = 0..10, 4x3 + 3x2 + 2x2 + 1x2 = 24, times 5
  //   targets = 120; and, with e = -1, a target that is not a replica:
  //   node 4 for the three orders partitions, node 1 for payments = 4
  //   (with e = e_v the not-replica fence carries no hint: not newer).
  //   (120 + 4) x 3 versions = 372.
  size_t produce_hints = 0, fetch_hints = 0, share_hints = 0;
  auto check_hint = [](const std::string& name, const codec::Uuid& id, int32_t partition,
                       int32_t leader, int32_t epoch, int32_t request_epoch) {
    auto [view_leader_id, view_epoch] = view_leader(name, id, partition);
    EXPECT_EQ(leader, view_leader_id) << name << "[" << partition << "]";
    EXPECT_EQ(epoch, view_epoch) << name << "[" << partition << "]";
    EXPECT_GT(epoch, request_epoch) << name << "[" << partition << "]: hint not newer";
  };
  for (int32_t target : {-1, 1, 2, 3, 4}) {
    for (int32_t e = -1; e <= 10; ++e) {
      for (int16_t v = 0; v <= 13; ++v) {
        SCOPED_TRACE("Produce v" + std::to_string(v) + " target " + std::to_string(target));
        auto req = testing::produce_request(v, {orders({{0}, {1}, {2}}), payments({{0}})});
        auto resp = build_local_response(req, v, decide_at(req, v, target), *snap_, endpoints_);
        for (const auto& t : resp.responses)
          for (const auto& p : t.partition_responses) {
            EXPECT_EQ(p.error_code, codec::kErrNotLeaderOrFollower);
            EXPECT_EQ(bool(p.current_leader), v >= 10) << "a fenced partition without its hint";
            if (!p.current_leader) continue;
            ++produce_hints;
            check_hint(t.name, t.topic_id, p.index, p.current_leader->leader_id,
                       p.current_leader->leader_epoch, -1);
            ASSERT_TRUE(resp.node_endpoints);
            testing::expect_endpoints_cover(*resp.node_endpoints, p.current_leader->leader_id);
          }
      }
      for (int16_t v = 4; v <= 18; ++v) {
        SCOPED_TRACE("Fetch v" + std::to_string(v) + " target " + std::to_string(target) +
                     " epoch " + std::to_string(e));
        auto req =
            testing::fetch_request(v, {orders({{0, e}, {1, e}, {2, e}}), payments({{0, e}})});
        auto resp = build_local_response(req, v, decide_at(req, v, target), *snap_, endpoints_);
        for (const auto& t : resp.responses)
          for (const auto& p : t.partitions) {
            if (!p.current_leader) continue;
            ++fetch_hints;
            check_hint(t.topic, t.topic_id, p.partition_index, p.current_leader->leader_id,
                       p.current_leader->leader_epoch, v >= 9 ? e : -1);
            ASSERT_TRUE(resp.node_endpoints);
            testing::expect_endpoints_cover(*resp.node_endpoints, p.current_leader->leader_id);
          }
      }
      for (int16_t v = 0; v <= 2; ++v) {
        SCOPED_TRACE("ShareFetch v" + std::to_string(v) + " target " + std::to_string(target));
        auto req = testing::share_fetch_request({orders({{0}, {1}, {2}}), payments({{0}})});
        auto resp = build_local_response(req, v, decide_at(req, v, target), *snap_, endpoints_);
        for (const auto& t : resp.responses)
          for (const auto& p : t.partitions) {
            EXPECT_EQ(p.error_code, codec::kErrNotLeaderOrFollower);
            EXPECT_GE(p.current_leader.leader_id, 0) << "a fenced partition without its hint";
            if (p.current_leader.leader_id < 0) continue;
            ++share_hints;
            // ShareFetch names no leader epoch: the request epoch is -1.
            check_hint("", t.topic_id, p.partition_index, p.current_leader.leader_id,
                       p.current_leader.leader_epoch, -1);
            testing::expect_endpoints_cover(resp.node_endpoints, p.current_leader.leader_id);
          }
      }
    }
  }
  EXPECT_EQ(produce_hints, 576u);
  EXPECT_EQ(fetch_hints, 372u);
  EXPECT_EQ(share_hints, 432u);
}

}  // namespace
}  // namespace epochgate::policy
