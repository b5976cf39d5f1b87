// tests/policy/decision_table_test.cc: every row of the fencing decision
// table (docs/architecture.md section 7) for every API, at the version thresholds
// (Fetch v8/v9, ListOffsets v3/v4, OffsetForLeaderEpoch v1/v2, Produce and
// share APIs at every version), plus the "never fence on ignorance" rows,
// hold, observe, off, acks=0, and the view being behind the client.
// No sockets: decoded requests against a view snapshot.
#include <gtest/gtest.h>

#include "policy_test_support.h"
#include "codec/kafka_errors.h"
#include "codec/produce_head.h"

namespace epochgate::policy {
namespace {

using config::Mode;
using testing::fetch_request;
using testing::list_offsets_request;
using testing::offset_for_leader_epoch_request;
using testing::orders;
using testing::payments;
using testing::produce_request;
using testing::Req;

// View (policy_test_support.h): orders p0 L1 e5 [1,2,3]; p1 L2 e7 [2,3,1];
// p2 L3 e9 [3,1,2]; payments p0 L2 e3 [2,3,4]. Learned at 1000 ms.
constexpr uint64_t kNow = testing::kLearnedAt + 1000;  // fresh: below refresh_before_fence_ms

class DecisionTable : public ::testing::Test {
 protected:
  void SetUp() override { testing::learn_standard_cluster(view_); }

  template <class Request>
  RequestDecision run(const Request& req, int16_t version, int32_t target, uint64_t now = kNow,
                      bool allow_hold = true) {
    snap_ = view_.snapshot();
    DecideContext ctx{*snap_, policy_, target, now, allow_hold};
    return decide(req, version, ctx);
  }

  MetadataView view_;
  CompiledPolicy policy_ = testing::default_policy();
  std::shared_ptr<const MetadataSnapshot> snap_;
};

void expect_fence(const PartitionDecision& d, int16_t error, Reason reason, int32_t hint_leader,
                  int32_t hint_epoch) {
  EXPECT_EQ(d.verdict, Verdict::kFence);
  EXPECT_EQ(d.error_code, error);
  EXPECT_EQ(d.reason, reason) << reason_name(d.reason);
  EXPECT_EQ(d.hint_leader, hint_leader);
  EXPECT_EQ(d.hint_epoch, hint_epoch);
  if (d.has_hint()) {
    EXPECT_GT(d.hint_epoch, d.request_epoch) << "hint must be strictly newer";
  }
}

// ------------------------------------------------------------------ Fetch

TEST_F(DecisionTable, FetchStaleEpochIsFencedFromV9) {
  for (int16_t v = 9; v <= 18; ++v) {
    auto d = run(fetch_request(v, {orders({{0, 4}})}), v, 1);
    ASSERT_EQ(d.partitions.size(), 1u);
    expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, 1, 5);
    EXPECT_EQ(d.action, Action::kAnswerLocally) << "v" << v;
  }
}

TEST_F(DecisionTable, FetchV8HasNoEpochSoNothingToFence) {
  for (int16_t v = 4; v <= 8; ++v) {
    auto d = run(fetch_request(v, {orders({{0, 4}})}), v, 1);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass) << "v" << v;
    EXPECT_EQ(d.partitions[0].request_epoch, -1);
    EXPECT_EQ(d.action, Action::kForwardAsIs);
  }
}

TEST_F(DecisionTable, FetchNewerEpochMeansTheViewIsBehind) {
  // Even to a broker the view thinks hosts no replica: the client knows more.
  for (int32_t target : {1, 4, -1}) {
    auto d = run(fetch_request(12, {orders({{0, 6}})}), 12, target);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPassAndRefresh);
    EXPECT_EQ(d.partitions[0].reason, Reason::kViewBehind);
    EXPECT_EQ(d.action, Action::kForwardAsIs);
    ASSERT_EQ(d.urgent_refresh.size(), 1u);
    EXPECT_EQ(d.urgent_refresh[0].name, "orders");
    EXPECT_EQ(d.urgent_refresh[0].id, testing::uuid(1));
  }
}

TEST_F(DecisionTable, FetchEqualEpochPasses) {
  auto d = run(fetch_request(11, {orders({{0, 5}, {1, 7}})}), 11, 1);
  for (const auto& p : d.partitions) EXPECT_EQ(p.verdict, Verdict::kPass);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
}

TEST_F(DecisionTable, FetchMinusOneGetsTheViewEpochInjectedFromV9) {
  auto d = run(fetch_request(9, {orders({{0, -1}, {2, -1}})}), 9, 1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kInject);
  EXPECT_EQ(d.partitions[0].view_epoch, 5);
  EXPECT_EQ(d.partitions[1].verdict, Verdict::kInject) << "follower fetch to a replica";
  EXPECT_EQ(d.partitions[1].view_epoch, 9);
  EXPECT_EQ(d.injected, 2u);
  EXPECT_EQ(d.action, Action::kForwardRewritten);

  d = run(fetch_request(8, {orders({{0, -1}})}), 8, 1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass) << "v8 has no field to write into";
  EXPECT_EQ(d.action, Action::kForwardAsIs);

  // Not into a fetch session (full or incremental): the broker would cache
  // the injected epoch for the session's lifetime.
  for (int32_t session_epoch : {0, 1, 7}) {
    auto in_session = fetch_request(12, {orders({{0, -1}})});
    in_session.session_id = session_epoch == 0 ? 0 : 55;
    in_session.session_epoch = session_epoch;
    d = run(in_session, 12, 1);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass) << "session epoch " << session_epoch;
    EXPECT_EQ(d.action, Action::kForwardAsIs);
  }

  policy_.inject_epochs = false;
  d = run(fetch_request(12, {orders({{0, -1}})}), 12, 1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
}

TEST_F(DecisionTable, FetchV11PlusWithoutEpochGetsOneOnlyWhenAimedAtAFollower) {
  // From v11 a fetch names the client's rack and the broker serves it from
  // any replica (KIP-392). To broker 1: orders p2 (leader 3, 1 a replica)
  // gets the view's epoch, so a deposed leader that still believes it leads
  // refuses it; p0, which the view says 1 leads, goes as the client sent it.
  for (int16_t v = 11; v <= 18; ++v) {
    auto d = run(fetch_request(v, {orders({{0, -1}, {2, -1}})}), v, 1);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass) << "v" << v;
    EXPECT_FALSE(d.partitions[0].injected()) << "v" << v;
    EXPECT_EQ(d.partitions[1].verdict, Verdict::kInject) << "v" << v;
    EXPECT_EQ(d.partitions[1].view_epoch, 9) << "v" << v;
    EXPECT_EQ(d.injected, 1u) << "v" << v;
    EXPECT_EQ(d.action, Action::kForwardRewritten) << "v" << v;

    d = run(fetch_request(v, {orders({{0, -1}})}), v, 1);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass) << "v" << v;
    EXPECT_EQ(d.action, Action::kForwardAsIs) << "v" << v;
  }
  // Before v11 the leader is injected into as well: a follower refuses an
  // epoch-less fetch itself there, so the epoch adds no error.
  for (int16_t v = 9; v <= 10; ++v) {
    auto d = run(fetch_request(v, {orders({{0, -1}})}), v, 1);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kInject) << "v" << v;
  }
  // The bootstrap connection's target is unknown: injected as before.
  auto d = run(fetch_request(12, {orders({{0, -1}})}), 12, -1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kInject);
  // An epoch the client sent is checked as always (stale: fenced).
  d = run(fetch_request(12, {orders({{0, 4}})}), 12, 1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kFence);
}

TEST_F(DecisionTable, FetchToABrokerThatIsNeitherLeaderNorReplica) {
  // Broker 4 hosts no replica of orders p0: NOT_LEADER_OR_FOLLOWER at every
  // version, with a hint when the view's epoch is newer than the request's.
  for (int16_t v = 4; v <= 18; ++v) {
    auto d = run(fetch_request(v, {orders({{0, -1}})}), v, 4);
    expect_fence(d.partitions[0], codec::kErrNotLeaderOrFollower, Reason::kNotReplica, 1, 5);
  }
  auto d = run(fetch_request(12, {orders({{0, 5}})}), 12, 4);
  expect_fence(d.partitions[0], codec::kErrNotLeaderOrFollower, Reason::kNotReplica, -1, -1);
  // A follower fetch (KIP-392) to a replica is legal.
  d = run(fetch_request(12, {orders({{0, 5}})}), 12, 2);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  d = run(fetch_request(12, {orders({{0, 5}})}), 12, 3);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
}

TEST_F(DecisionTable, FetchEpochCheckComesBeforeTheReplicaCheck) {
  auto d = run(fetch_request(12, {orders({{0, 3}})}), 12, 4);
  expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, 1, 5);
}

TEST_F(DecisionTable, FetchReplicaListUnknownNeverFencesAsNotReplica) {
  // Learned from a hint only: no replica list, so "not a replica" is unknown.
  view_.learn_current_leader(TopicRef{"hinted", {}}, 0, 1, 4, testing::kLearnedAt, Source::kHint);
  auto d = run(fetch_request(12, {testing::ReqTopic{"hinted", {}, {{0, 4}}}}), 12, 4);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
}

TEST_F(DecisionTable, BootstrapConnectionHasNoLeadershipChecksButEpochChecksApply) {
  auto d = run(fetch_request(12, {orders({{0, 5}})}), 12, -1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  d = run(fetch_request(12, {orders({{0, 4}})}), 12, -1);
  expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, 1, 5);
  d = run(produce_request(9, {orders({{0}})}), 9, -1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
}

TEST_F(DecisionTable, FollowerReplicaFetchIsNeverDecided) {
  auto req = fetch_request(12, {orders({{0, 1}})});
  req.replica_id = 2;
  auto d = run(req, 12, 4);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  EXPECT_EQ(d.partitions[0].reason, Reason::kReplicaRequest);
  req = fetch_request(15, {orders({{0, 1}})});
  req.replica_state = codec::FetchRequest::ReplicaState{2, 7, {}};
  d = run(req, 15, 4);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
}

TEST_F(DecisionTable, FetchByTopicIdFromV13) {
  auto d = run(fetch_request(13, {orders({{1, 6}})}), 13, 2);
  expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, 2, 7);
}

TEST_F(DecisionTable, LeaderlessPartitionFencesOnEpochWithoutHintAndNeverOnLeadership) {
  auto md = testing::metadata(
      {1, 2}, {testing::TopicSpec{
                  "nolead", testing::uuid(5), {testing::PartSpec{0, -1, 4, {1, 2}, {}, 5}}}});
  view_.learn_metadata(md, 12, testing::kLearnedAt, Source::kRefresher);
  testing::ReqTopic t{"nolead", testing::uuid(5), {{0, 3}}};
  auto d = run(fetch_request(16, {t}), 16, 2);
  expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, -1, -1);
  d = run(produce_request(10, {t}), 10, 2);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPassAndRefresh);
  EXPECT_EQ(d.partitions[0].reason, Reason::kNoLeader);
}

// ----------------------------------------------------- ListOffsets, OffsetForLeaderEpoch

TEST_F(DecisionTable, ListOffsetsV4FencesV3CannotBe) {
  for (int16_t v = 4; v <= 11; ++v) {
    auto d = run(list_offsets_request(v, {orders({{0, 4}})}), v, 1);
    expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, 1, 5);
  }
  for (int16_t v = 0; v <= 3; ++v) {
    auto d = run(list_offsets_request(v, {orders({{0, 4}})}), v, 1);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass) << "v" << v;
    EXPECT_EQ(d.action, Action::kForwardAsIs);
  }
  EXPECT_FALSE(policy_decides(codec::kListOffsets, 3));
  EXPECT_TRUE(policy_decides(codec::kListOffsets, 4));
}

TEST_F(DecisionTable, ListOffsetsOtherRows) {
  auto d = run(list_offsets_request(7, {orders({{0, 6}})}), 7, 1);
  EXPECT_EQ(d.partitions[0].reason, Reason::kViewBehind);
  d = run(list_offsets_request(7, {orders({{0, -1}})}), 7, 1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kInject);
  EXPECT_EQ(d.partitions[0].view_epoch, 5);
  // No leadership row for ListOffsets: the broker answers that itself.
  d = run(list_offsets_request(7, {orders({{0, 5}})}), 7, 4);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
}

TEST_F(DecisionTable, OffsetForLeaderEpochV2FencesV1CannotBe) {
  for (int16_t v = 2; v <= 4; ++v) {
    auto d = run(offset_for_leader_epoch_request(v, {orders({{2, 8}})}), v, 3);
    expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, 3, 9);
  }
  for (int16_t v = 0; v <= 1; ++v) {
    auto d = run(offset_for_leader_epoch_request(v, {orders({{2, 8}})}), v, 3);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  }
  auto d = run(offset_for_leader_epoch_request(3, {orders({{2, 10}})}), 3, 3);
  EXPECT_EQ(d.partitions[0].reason, Reason::kViewBehind);
  d = run(offset_for_leader_epoch_request(3, {orders({{2, -1}})}), 3, 3);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kInject);
  // A follower broker's request (ReplicaId >= 0) is never decided.
  d = run(offset_for_leader_epoch_request(3, {orders({{2, 1}})}, 1), 3, 3);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  EXPECT_EQ(d.partitions[0].reason, Reason::kReplicaRequest);
}

// ----------------------------------------------------------------- Produce

TEST_F(DecisionTable, ProduceToANonLeaderIsNotLeaderWithHintAtEveryVersion) {
  for (int16_t v = 0; v <= 13; ++v) {
    auto d = run(produce_request(v, {orders({{0}, {1}})}), v, 2);
    ASSERT_EQ(d.partitions.size(), 2u);
    expect_fence(d.partitions[0], codec::kErrNotLeaderOrFollower, Reason::kNotLeader, 1, 5);
    EXPECT_EQ(d.partitions[1].verdict, Verdict::kPass) << "broker 2 leads p1";
    EXPECT_EQ(d.action, Action::kSplit) << "v" << v;
  }
}

TEST_F(DecisionTable, ProduceIsNeverFencedLeaderEpoch) {
  for (int16_t v = 0; v <= 13; ++v)
    for (int32_t target : {-1, 1, 2, 3, 4}) {
      auto d = run(produce_request(v, {orders({{0}, {1}, {2}}), payments({{0}})}), v, target);
      for (const auto& p : d.partitions) EXPECT_NE(p.error_code, codec::kErrFencedLeaderEpoch);
    }
}

TEST_F(DecisionTable, ProduceToTheLeaderPasses) {
  auto d = run(produce_request(9, {orders({{2}})}), 9, 3);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
}

TEST_F(DecisionTable, ProduceAllStaleIsAnsweredLocally) {
  auto d = run(produce_request(10, {orders({{0}, {2}})}), 10, 2);
  EXPECT_EQ(d.fenced, 2u);
  EXPECT_EQ(d.action, Action::kAnswerLocally);
}

TEST_F(DecisionTable, AcksZeroProduceToAStaleLeaderClosesTheConnection) {
  auto d = run(produce_request(9, {orders({{0}, {1}})}, 0), 9, 2);
  EXPECT_EQ(d.action, Action::kCloseConnection);
  d = run(produce_request(9, {orders({{1}})}, 0), 9, 2);
  EXPECT_EQ(d.action, Action::kForwardAsIs) << "acks=0 to the leader goes through";
  policy_.modes = ModeResolver([] {
    config::PolicyConfig c;
    c.default_mode = Mode::kObserve;
    return c;
  }());
  d = run(produce_request(9, {orders({{0}})}, 0), 9, 2);
  EXPECT_EQ(d.action, Action::kForwardAsIs) << "observe never closes";
}

// A Produce read in place (codec::ProduceHead, what the session decides its
// forwarded Produce requests on) is decided as its full decode is: every
// version, target, acks, mode and kind of partition (led, not led, unknown
// partition, unknown topic, stale entry).
TEST_F(DecisionTable, ProduceReadInPlaceDecidesAsTheDecodedRequest) {
  const testing::ReqTopic unknown{"no-such-topic", testing::uuid(9), {Req(0)}};
  const std::vector<std::vector<testing::ReqTopic>> requests = {
      {orders({{2}})},
      {orders({{0}, {1}, {2}, {7}}), payments({{0}}), unknown},
      {unknown, payments({{0}})},
      {}};
  for (Mode mode : {Mode::kEnforce, Mode::kObserve}) {
    policy_.modes = ModeResolver([&] {
      config::PolicyConfig c;
      c.default_mode = mode;
      return c;
    }());
    for (int16_t v = 0; v <= 13; ++v)
      for (int32_t target : {-1, 1, 2, 3, 4})
        for (int16_t acks : {int16_t{0}, int16_t{1}})
          for (uint64_t now : {kNow, kNow + 3'600'000})
            for (const auto& topics : requests) {
              const auto body = testing::encode_body(produce_request(v, topics, acks), v);
              const auto full = testing::decode_body<codec::ProduceRequest>(body, v);
              codec::ProduceHead head;
              codec::DecodeBounds bounds;
              ASSERT_TRUE(head.read(body.data(), body.size(), v, bounds).ok());
              const RequestDecision want = run(full, v, target, now);
              const RequestDecision got = run(head, v, target, now);
              const std::string where = "v" + std::to_string(v) + " target " +
                                        std::to_string(target) + " acks " +
                                        std::to_string(acks) + " topics " +
                                        std::to_string(topics.size());
              EXPECT_EQ(got.api_key, want.api_key) << where;
              EXPECT_EQ(got.action, want.action) << where;
              EXPECT_EQ(got.fenced, want.fenced) << where;
              EXPECT_EQ(got.observed_fences, want.observed_fences) << where;
              EXPECT_EQ(got.held, want.held) << where;
              EXPECT_EQ(got.topic_start, want.topic_start) << where;
              ASSERT_EQ(got.partitions.size(), want.partitions.size()) << where;
              for (size_t i = 0; i < got.partitions.size(); ++i) {
                const PartitionDecision& g = got.partitions[i];
                const PartitionDecision& w = want.partitions[i];
                EXPECT_EQ(g.topic_index, w.topic_index) << where;
                EXPECT_EQ(g.partition_index, w.partition_index) << where;
                EXPECT_EQ(g.partition, w.partition) << where;
                EXPECT_EQ(g.verdict, w.verdict) << where;
                EXPECT_EQ(g.reason, w.reason) << where;
                EXPECT_EQ(g.mode, w.mode) << where;
                EXPECT_EQ(g.error_code, w.error_code) << where;
                EXPECT_EQ(g.view_epoch, w.view_epoch) << where;
                EXPECT_EQ(g.hint_leader, w.hint_leader) << where;
                EXPECT_EQ(g.hint_epoch, w.hint_epoch) << where;
              }
              ASSERT_EQ(got.urgent_refresh.size(), want.urgent_refresh.size()) << where;
              for (size_t i = 0; i < got.urgent_refresh.size(); ++i) {
                EXPECT_EQ(got.urgent_refresh[i].name, want.urgent_refresh[i].name) << where;
                EXPECT_EQ(got.urgent_refresh[i].id, want.urgent_refresh[i].id) << where;
              }
            }
  }
}

// ------------------------------------------------------------ Share APIs

TEST_F(DecisionTable, ShareFetchAndAcknowledgeToANonLeader) {
  for (int16_t v = 0; v <= 2; ++v) {
    auto d = run(testing::share_fetch_request({payments({{0}})}), v, 3);
    expect_fence(d.partitions[0], codec::kErrNotLeaderOrFollower, Reason::kNotLeader, 2, 3);
    EXPECT_EQ(d.group, ApiGroup::kShare);
    d = run(testing::share_acknowledge_request({payments({{0}})}), v, 3);
    expect_fence(d.partitions[0], codec::kErrNotLeaderOrFollower, Reason::kNotLeader, 2, 3);
    d = run(testing::share_fetch_request({payments({{0}})}), v, 2);
    EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  }
  // Unknown topic id: never fence, refresh by id.
  auto d =
      run(testing::share_fetch_request({testing::ReqTopic{"", testing::uuid(99), {{0}}}}), 1, 3);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPassAndRefresh);
  ASSERT_EQ(d.urgent_refresh.size(), 1u);
  EXPECT_EQ(d.urgent_refresh[0].id, testing::uuid(99));
}

// -------------------------------------------------------------- Persister

TEST_F(DecisionTable, PersisterLeaderEpochOlderThanTheViewIsFenced) {
  auto d = run(testing::read_state_request({orders({{1, 6}, {1, 7}, {1, 8}, {1, -1}})}), 0, 1);
  expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, -1, -1);
  EXPECT_EQ(d.partitions[1].verdict, Verdict::kPass);
  EXPECT_EQ(d.partitions[2].verdict, Verdict::kPassAndRefresh);
  EXPECT_EQ(d.partitions[3].verdict, Verdict::kPass) << "-1 is never injected into persister calls";
  EXPECT_EQ(d.group, ApiGroup::kPersister);
  for (int16_t v = 0; v <= 1; ++v) {
    d = run(testing::write_state_request({orders({{2, 8}})}), v, 1);
    expect_fence(d.partitions[0], codec::kErrFencedLeaderEpoch, Reason::kStaleEpoch, -1, -1);
  }
  // No leadership row: persister calls go to the share coordinator.
  d = run(testing::write_state_request({orders({{2, 9}})}), 0, 4);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
}

TEST_F(DecisionTable, PersisterCallsWithoutACheckedEpochAlwaysPass) {
  codec::InitializeShareGroupStateRequest init;
  init.topics.push_back({testing::uuid(1), {{0, 1, 0, {}}}, {}});
  auto d = run(init, 0, 1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  codec::DeleteShareGroupStateRequest del;
  del.topics.push_back({testing::uuid(1), {{0, {}}}, {}});
  d = run(del, 0, 1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  codec::ReadShareGroupStateSummaryRequest sum;
  sum.topics.push_back({testing::uuid(1), {{0, 0, {}}}, {}});  // the group coordinator sends 0
  d = run(sum, 1, 1);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  EXPECT_FALSE(policy_decides(codec::kReadShareGroupStateSummary, 1));
  EXPECT_TRUE(policy_decides(codec::kWriteShareGroupState, 1));
}

// --------------------------------------------- never fence on ignorance

TEST_F(DecisionTable, UnknownTopicOrPartitionPassesAndRefreshes) {
  auto d = run(produce_request(9, {testing::ReqTopic{"unknown", {}, {{0}}}, orders({{7}})}), 9, 4);
  for (const auto& p : d.partitions) {
    EXPECT_EQ(p.verdict, Verdict::kPassAndRefresh);
    EXPECT_EQ(p.reason, Reason::kUnknownPartition);
  }
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  ASSERT_EQ(d.urgent_refresh.size(), 2u);
  EXPECT_EQ(d.urgent_refresh[0].name, "unknown");
  EXPECT_EQ(d.urgent_refresh[1].name, "orders");
}

TEST_F(DecisionTable, EntryOlderThanMaxStalenessPasses) {
  const uint64_t old = testing::kLearnedAt + policy_.max_staleness_ms + 1;
  auto d = run(produce_request(9, {orders({{0}})}), 9, 2, old);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPassAndRefresh);
  EXPECT_EQ(d.partitions[0].reason, Reason::kStaleView);
  d = run(fetch_request(12, {orders({{0, 1}})}), 12, 1, old);
  EXPECT_EQ(d.partitions[0].reason, Reason::kStaleView);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
}

TEST_F(DecisionTable, SuspectEntriesNeverFence) {
  auto conflict = testing::metadata(
      {1},
      {testing::TopicSpec{"orders", testing::uuid(1), {testing::PartSpec{0, 2, 5, {1, 2, 3}}}}});
  view_.learn_metadata(conflict, 12, testing::kLearnedAt, Source::kMetadataResponse);
  auto d = run(produce_request(9, {orders({{0}})}), 9, 3);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPassAndRefresh);
  EXPECT_EQ(d.partitions[0].reason, Reason::kSuspect);
  d = run(fetch_request(12, {orders({{0, 1}})}), 12, 1);
  EXPECT_EQ(d.partitions[0].reason, Reason::kSuspect);
  EXPECT_EQ(d.partitions[0].hint_leader, -1);
}

TEST_F(DecisionTable, EntriesWithoutEpochsNeverFence) {
  auto md = testing::metadata(
      {1, 2}, {testing::TopicSpec{"old", {}, {testing::PartSpec{0, 1, 3, {1, 2}}}}});
  view_.learn_metadata(md, 5, testing::kLearnedAt, Source::kMetadataResponse);
  auto d = run(produce_request(5, {testing::ReqTopic{"old", {}, {{0}}}}), 5, 2);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPassAndRefresh);
  EXPECT_EQ(d.partitions[0].reason, Reason::kNoEpoch);
}

// ---------------------------------------------------------------- hold

TEST_F(DecisionTable, MismatchOnAnOldEntryHoldsForARefreshFirst) {
  const uint64_t later = testing::kLearnedAt + policy_.refresh_before_fence_ms + 1;
  auto d = run(produce_request(9, {orders({{0}, {1}})}), 9, 2, later);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kHold);
  EXPECT_EQ(d.partitions[0].error_code, codec::kErrNotLeaderOrFollower);
  EXPECT_EQ(d.action, Action::kHold);
  EXPECT_EQ(d.hold_timeout_ms, policy_.hold_timeout_ms);
  ASSERT_EQ(d.urgent_refresh.size(), 1u);
  // After the wait, deciding again without hold fences.
  d = run(produce_request(9, {orders({{0}, {1}})}), 9, 2, later, false);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kFence);
  EXPECT_EQ(d.action, Action::kSplit);
  // A refresh that only confirms the leader is no proof that the client is
  // the one behind (Produce has no epoch): it still holds. The session then
  // decides without hold once a refresh finished after the request waited.
  testing::learn_standard_cluster(view_, later);
  d = run(produce_request(9, {orders({{0}})}), 9, 2, later + 10);
  EXPECT_EQ(d.action, Action::kHold);
}

TEST_F(DecisionTable, LeadershipMismatchRightAfterTheViewSawAMoveFencesAtOnce) {
  const uint64_t later = testing::kLearnedAt + policy_.refresh_before_fence_ms + 1;
  // orders-0 moved from broker 1 to broker 3 (epoch 5 -> 6) and the view just
  // learned it: a Produce still sent to broker 1 comes from a stale client.
  view_.learn_current_leader(TopicRef{"orders", {}}, 0, 3, 6, later, Source::kHint);
  auto d = run(produce_request(10, {orders({{0}})}), 10, 1, later + 10);
  EXPECT_EQ(d.action, Action::kAnswerLocally);
  EXPECT_EQ(d.partitions[0].hint_leader, 3);
  EXPECT_EQ(d.partitions[0].hint_epoch, 6);
}

TEST_F(DecisionTable, EpochMismatchOnAConfirmedEntryFencesAtOnce) {
  const uint64_t later = testing::kLearnedAt + policy_.refresh_before_fence_ms + 1;
  // A refresh confirmed the view just now: CurrentLeaderEpoch 4 < 5 proves
  // the client is behind, whatever the entry's last change.
  testing::learn_standard_cluster(view_, later);
  auto d = run(fetch_request(12, {orders({{0, 4}})}), 12, 1, later + 10);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kFence);
  EXPECT_EQ(d.partitions[0].error_code, codec::kErrFencedLeaderEpoch);
}

// ------------------------------------------------------ observe and off

TEST_F(DecisionTable, ObserveModeDecidesButForwardsAsIs) {
  config::PolicyConfig cfg;
  cfg.rules.push_back({"orders", {}, Mode::kObserve});
  policy_ = CompiledPolicy::compile(cfg);
  auto d = run(produce_request(10, {orders({{0}})}), 10, 2);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kFence);
  EXPECT_EQ(d.partitions[0].mode, Mode::kObserve);
  EXPECT_EQ(d.partitions[0].reason, Reason::kNotLeader);
  EXPECT_FALSE(d.partitions[0].answered_locally());
  EXPECT_EQ(d.fenced, 0u);
  EXPECT_EQ(d.observed_fences, 1u);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  // Injection is observed, not done; observe never holds.
  d = run(fetch_request(12, {orders({{0, -1}})}), 12, 2);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kInject);
  EXPECT_FALSE(d.partitions[0].injected());
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  d = run(fetch_request(12, {orders({{0, 1}})}), 12, 1, testing::kLearnedAt + 100000);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kFence);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  // Enforced topics in the same request still fence.
  d = run(produce_request(10, {orders({{0}}), payments({{0}})}), 10, 3);
  EXPECT_EQ(d.fenced, 1u);
  EXPECT_EQ(d.observed_fences, 1u);
  EXPECT_EQ(d.action, Action::kSplit);
}

TEST_F(DecisionTable, OffModeDoesNothing) {
  config::PolicyConfig cfg;
  cfg.rules.push_back({"*", {"fetch"}, Mode::kOff});
  policy_ = CompiledPolicy::compile(cfg);
  auto d =
      run(fetch_request(12, {orders({{0, 1}, {1, -1}}), testing::ReqTopic{"zzz", {}, {{0, 1}}}}),
          12, 4);
  for (const auto& p : d.partitions) {
    EXPECT_EQ(p.verdict, Verdict::kPass);
    EXPECT_EQ(p.reason, Reason::kNone);
    EXPECT_EQ(p.mode, Mode::kOff);
  }
  EXPECT_TRUE(d.urgent_refresh.empty());
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  auto p = run(produce_request(9, {orders({{0}})}), 9, 2);
  EXPECT_EQ(p.action, Action::kAnswerLocally) << "produce still enforced";
}

// --------------------------------------------------- view behind the client

TEST_F(DecisionTable, ViewBehindTheClientNeverFences) {
  // The leader of orders p0 moved to broker 2 at epoch 6; the view still says
  // broker 1 at epoch 5, learned 60 s ago (older than refresh_before_fence).
  const uint64_t now = testing::kLearnedAt + 60000;
  // A consumer that knows epoch 6 fetches from broker 2: forwarded, refreshed.
  auto d = run(fetch_request(12, {orders({{0, 6}})}), 12, 2, now);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPassAndRefresh);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  d = run(list_offsets_request(7, {orders({{0, 6}})}), 7, 2, now);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
  // A producer (no epoch on the wire) sends to broker 2: held for a refresh,
  // never fenced before the view has had the chance to catch up.
  d = run(produce_request(9, {orders({{0}})}), 9, 2, now);
  EXPECT_EQ(d.action, Action::kHold);
  // The refresh brings epoch 6 with leader 2: the produce passes.
  auto md = testing::metadata(
      {1, 2, 3},
      {testing::TopicSpec{"orders", testing::uuid(1), {testing::PartSpec{0, 2, 6, {1, 2, 3}}}}});
  view_.learn_metadata(md, 12, now + 5, Source::kRefresher);
  d = run(produce_request(9, {orders({{0}})}), 9, 2, now + 10, false);
  EXPECT_EQ(d.partitions[0].verdict, Verdict::kPass);
  EXPECT_EQ(d.action, Action::kForwardAsIs);
}

// ------------------------------------------------------- request shape

TEST_F(DecisionTable, DecisionsFollowRequestOrderAndIndexes) {
  auto d = run(produce_request(9, {payments({{0}}), orders({{2}, {0}, {1}})}), 9, 2);
  ASSERT_EQ(d.topic_count(), 2u);
  EXPECT_EQ(d.at(0, 0).partition, 0);
  EXPECT_EQ(d.at(1, 0).partition, 2);
  EXPECT_EQ(d.at(1, 1).partition, 0);
  EXPECT_EQ(d.at(1, 2).partition, 1);
  EXPECT_EQ(d.at(1, 2).topic_index, 1u);
  EXPECT_EQ(d.at(1, 2).partition_index, 2u);
  EXPECT_EQ(d.at(0, 0).verdict, Verdict::kPass);
  EXPECT_EQ(d.at(1, 0).verdict, Verdict::kFence);
  EXPECT_EQ(d.at(1, 1).verdict, Verdict::kFence);
  EXPECT_EQ(d.at(1, 2).verdict, Verdict::kPass);
  EXPECT_EQ(d.fenced, 2u);
  EXPECT_EQ(d.action, Action::kSplit);
  auto empty = run(produce_request(9, {}), 9, 2);
  EXPECT_EQ(empty.action, Action::kForwardAsIs);
}

TEST_F(DecisionTable, NamesAreStable) {
  EXPECT_STREQ(reason_name(Reason::kStaleEpoch), "stale_epoch");
  EXPECT_STREQ(reason_name(Reason::kNotLeader), "not_leader");
  EXPECT_STREQ(reason_name(Reason::kNotReplica), "not_replica");
  EXPECT_STREQ(action_name(Action::kCloseConnection), "close_connection");
  EXPECT_STREQ(verdict_name(Verdict::kPassAndRefresh), "pass_and_refresh");
}

}  // namespace
}  // namespace epochgate::policy
