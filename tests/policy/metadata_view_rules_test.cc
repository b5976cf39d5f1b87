// tests/policy/metadata_view_rules_test.cc: the view's learning rules
// (docs/architecture.md section 5, invariant 6): epochs never go backwards, recreated
// topics start again, same epoch with two leaders is never trusted, leaderless
// entries are never hinted, old Metadata versions carry no epochs, and broker
// errors and hints update the view.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <thread>

#include "policy_test_support.h"
#include "codec/kafka_errors.h"

namespace epochgate::policy {
namespace {

using testing::learn_standard_cluster;
using testing::metadata;
using testing::PartSpec;
using testing::TopicSpec;
using testing::uuid;

TEST(MetadataViewRules, LearnsLeadersEpochsReplicasNodesAndIds) {
  MetadataView view;
  LearnReport rep;
  auto md = metadata({1, 2}, {TopicSpec{"orders", uuid(1), {PartSpec{0, 1, 5, {1, 2}}}}});
  rep = view.learn_metadata(md, 12, 100, Source::kMetadataResponse);
  EXPECT_TRUE(rep.published);
  EXPECT_EQ(rep.partitions_learned, 1u);
  EXPECT_EQ(rep.new_nodes, (std::vector<int32_t>{1, 2}));
  auto snap = view.snapshot();
  const PartitionEntry* e = snap->find_partition("orders", 0);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->leader_id, 1);
  EXPECT_EQ(e->leader_epoch, 5);
  EXPECT_EQ(e->learned_at_ms, 100u);
  EXPECT_EQ(e->source, Source::kMetadataResponse);
  ASSERT_TRUE(e->replica_set);
  EXPECT_EQ(e->replica_set->replicas, (std::vector<int32_t>{1, 2}));
  EXPECT_TRUE(e->is_replica(2));
  EXPECT_FALSE(e->is_replica(3));
  EXPECT_EQ(snap->find_partition(uuid(1), 0), e);
  ASSERT_NE(snap->find_node(2), nullptr);
  EXPECT_EQ(snap->find_node(2)->host, "broker-2.upstream");
  EXPECT_EQ(snap->partition_count(), 1u);
  EXPECT_EQ(view.partition_count(), 1u);
  // The same nodes again are not new.
  rep = view.learn_metadata(md, 12, 200, Source::kMetadataResponse);
  EXPECT_TRUE(rep.new_nodes.empty());
  EXPECT_EQ(rep.leaders_confirmed, 1u);
  EXPECT_EQ(view.snapshot()->find_partition("orders", 0)->learned_at_ms, 200u);
}

TEST(MetadataViewRules, LowerEpochIsIgnoredHigherAdvances) {
  MetadataView view;
  learn_standard_cluster(view);
  auto lower = metadata({1}, {TopicSpec{"orders", uuid(1), {PartSpec{0, 2, 4, {1, 2, 3}}}}});
  LearnReport rep = view.learn_metadata(lower, 12, 2000, Source::kMetadataResponse);
  EXPECT_EQ(rep.stale_ignored, 1u);
  EXPECT_EQ(rep.marked_suspect, 0u) << "same topic id: a lagging broker, not a recreated topic";
  const PartitionEntry* e = view.snapshot()->find_partition("orders", 0);
  EXPECT_EQ(e->leader_id, 1);
  EXPECT_EQ(e->leader_epoch, 5);
  EXPECT_FALSE(e->suspect());

  auto higher = metadata({1}, {TopicSpec{"orders", uuid(1), {PartSpec{0, 2, 6, {1, 2, 3}}}}});
  rep = view.learn_metadata(higher, 12, 3000, Source::kMetadataResponse);
  EXPECT_EQ(rep.epochs_advanced, 1u);
  e = view.snapshot()->find_partition("orders", 0);
  EXPECT_EQ(e->leader_id, 2);
  EXPECT_EQ(e->leader_epoch, 6);
}

TEST(MetadataViewRules, LowerEpochWithoutTopicIdsMarksSuspect) {
  // Metadata v9 has epochs but no topic ids: a lower epoch may be a recreated
  // topic, so the entry must stop fencing until a refresh with ids.
  MetadataView view;
  learn_standard_cluster(view);
  auto lower = metadata({1}, {TopicSpec{"orders", {}, {PartSpec{0, 2, 0, {1, 2, 3}}}}});
  LearnReport rep = view.learn_metadata(lower, 9, 2000, Source::kMetadataResponse);
  EXPECT_EQ(rep.marked_suspect, 1u);
  ASSERT_EQ(rep.urgent_refresh.size(), 1u);
  EXPECT_EQ(rep.urgent_refresh[0].name, "orders");
  const PartitionEntry* e = view.snapshot()->find_partition("orders", 0);
  EXPECT_EQ(e->leader_epoch, 5) << "the epoch never goes backwards";
  EXPECT_TRUE(e->suspect());
  EXPECT_FALSE(e->hintable());
  // The refresher confirms the view's entry (same id, same leader and epoch).
  learn_standard_cluster(view, 3000);
  e = view.snapshot()->find_partition("orders", 0);
  EXPECT_FALSE(e->suspect());
}

TEST(MetadataViewRules, RecreatedTopicStartsAgain) {
  MetadataView view;
  learn_standard_cluster(view);
  auto recreated = metadata({1, 2}, {TopicSpec{"orders", uuid(9), {PartSpec{0, 2, 0, {2, 1}}}}});
  LearnReport rep = view.learn_metadata(recreated, 12, 2000, Source::kRefresher);
  EXPECT_EQ(rep.topics_recreated, 1u);
  auto snap = view.snapshot();
  const PartitionEntry* e = snap->find_partition("orders", 0);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->leader_id, 2);
  EXPECT_EQ(e->leader_epoch, 0) << "epochs start again for a new topic id";
  EXPECT_FALSE(e->suspect());
  EXPECT_EQ(snap->find_partition("orders", 1), nullptr) << "old incarnation's partitions are gone";
  EXPECT_EQ(snap->find_topic(uuid(1)), nullptr);
  EXPECT_EQ(snap->find_topic(uuid(9))->name, "orders");
  EXPECT_EQ(snap->partition_count(), 2u);  // orders p0 + payments p0
}

TEST(MetadataViewRules, HintAboutAnotherIncarnationIsNotApplied) {
  MetadataView view;
  learn_standard_cluster(view);
  LearnReport rep =
      view.learn_current_leader(TopicRef{"orders", uuid(9)}, 0, 3, 1, 2000, Source::kHint);
  EXPECT_EQ(rep.hints_learned, 0u);
  EXPECT_EQ(rep.urgent_refresh.size(), 1u);
  EXPECT_EQ(view.snapshot()->find_partition("orders", 0)->leader_epoch, 5);
}

TEST(MetadataViewRules, SameEpochTwoLeadersIsConflictedUntilANewerEpoch) {
  MetadataView view;
  learn_standard_cluster(view);
  auto other = metadata({1}, {TopicSpec{"orders", uuid(1), {PartSpec{0, 2, 5, {1, 2, 3}}}}});
  LearnReport rep = view.learn_metadata(other, 12, 2000, Source::kMetadataResponse);
  EXPECT_EQ(rep.marked_suspect, 1u);
  EXPECT_EQ(rep.urgent_refresh.size(), 1u);
  const PartitionEntry* e = view.snapshot()->find_partition("orders", 0);
  EXPECT_TRUE(e->conflicted);
  EXPECT_FALSE(e->hintable()) << "never name two leaders under one epoch";
  // A refresh naming one of them at the same epoch does not clear it.
  rep = view.learn_metadata(other, 12, 3000, Source::kRefresher);
  EXPECT_TRUE(view.snapshot()->find_partition("orders", 0)->conflicted);
  // A strictly newer epoch does.
  auto newer = metadata({1}, {TopicSpec{"orders", uuid(1), {PartSpec{0, 2, 6, {1, 2, 3}}}}});
  view.learn_metadata(newer, 12, 4000, Source::kRefresher);
  e = view.snapshot()->find_partition("orders", 0);
  EXPECT_FALSE(e->suspect());
  EXPECT_TRUE(e->hintable());
  EXPECT_EQ(e->leader_id, 2);
  EXPECT_EQ(e->leader_epoch, 6);
}

TEST(MetadataViewRules, LeaderlessIsStoredButNeverHintable) {
  MetadataView view;
  auto md = metadata(
      {1},
      {TopicSpec{"t", uuid(3), {PartSpec{0, -1, -1, {1}, {}, 5}, PartSpec{1, -1, 4, {1}, {}, 5}}}});
  view.learn_metadata(md, 12, 100, Source::kRefresher);
  auto snap = view.snapshot();
  for (int32_t p : {0, 1}) {
    const PartitionEntry* e = snap->find_partition("t", p);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->leader_id, -1);
    EXPECT_FALSE(e->hintable());
  }
  // Hints naming -1 are never stored.
  LearnReport rep = view.learn_current_leader(TopicRef{"t", {}}, 0, -1, 7, 200, Source::kHint);
  EXPECT_FALSE(rep.published);
  rep = view.learn_current_leader(TopicRef{"t", {}}, 0, 1, -1, 200, Source::kHint);
  EXPECT_FALSE(rep.published);
}

TEST(MetadataViewRules, SameEpochWithoutLeaderDoubtsButKeepsTheLeader) {
  // A broker whose listener lacks the leader reports leader -1 at the current
  // epoch (LEADER_NOT_AVAILABLE): stop fencing, keep the leader.
  MetadataView view;
  learn_standard_cluster(view);
  auto md = metadata({1}, {TopicSpec{"orders", uuid(1), {PartSpec{0, -1, 5, {1, 2, 3}, {}, 5}}}});
  LearnReport rep = view.learn_metadata(md, 12, 2000, Source::kMetadataResponse);
  EXPECT_EQ(rep.marked_suspect, 1u);
  const PartitionEntry* e = view.snapshot()->find_partition("orders", 0);
  EXPECT_EQ(e->leader_id, 1);
  EXPECT_TRUE(e->doubted);
  // The refresher sees the leader again at that epoch: trusted again.
  learn_standard_cluster(view, 3000);
  EXPECT_FALSE(view.snapshot()->find_partition("orders", 0)->suspect());
}

TEST(MetadataViewRules, MetadataBeforeV7StoresLeadersWithoutEpochs) {
  MetadataView view;
  auto md = metadata({1, 2}, {TopicSpec{"old", {}, {PartSpec{0, 1, 42, {1, 2}}}}});
  view.learn_metadata(md, 6, 100, Source::kMetadataResponse);
  const PartitionEntry* e = view.snapshot()->find_partition("old", 0);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->leader_id, 1);
  EXPECT_EQ(e->leader_epoch, -1) << "v6 has no LeaderEpoch field: whatever is there is ignored";
  EXPECT_FALSE(e->hintable());
  // An epoch learned later wins; a later v1 response naming another leader
  // cannot be ordered against it and makes the entry suspect.
  md = metadata({1, 2}, {TopicSpec{"old", uuid(4), {PartSpec{0, 1, 3, {1, 2}}}}});
  view.learn_metadata(md, 12, 200, Source::kRefresher);
  EXPECT_EQ(view.snapshot()->find_partition("old", 0)->leader_epoch, 3);
  md = metadata({1, 2}, {TopicSpec{"old", {}, {PartSpec{0, 2, -1, {1, 2}}}}});
  LearnReport rep = view.learn_metadata(md, 1, 300, Source::kMetadataResponse);
  EXPECT_EQ(rep.marked_suspect, 1u);
  e = view.snapshot()->find_partition("old", 0);
  EXPECT_EQ(e->leader_id, 1);
  EXPECT_EQ(e->leader_epoch, 3);
  EXPECT_TRUE(e->suspect());
}

TEST(MetadataViewRules, UnknownTopicErrorForgetsTheTopic) {
  MetadataView view;
  learn_standard_cluster(view);
  TopicSpec gone{"orders", uuid(1), {}, 3};
  LearnReport rep = view.learn_metadata(metadata({1}, {gone}), 12, 2000, Source::kRefresher);
  EXPECT_EQ(rep.topics_removed, 1u);
  EXPECT_EQ(view.snapshot()->find_topic("orders"), nullptr);
  EXPECT_EQ(view.snapshot()->find_topic(uuid(1)), nullptr);
  EXPECT_EQ(view.partition_count(), 1u);
  // Other topic errors (authorization) change nothing.
  TopicSpec denied{"payments", uuid(2), {}, 29};
  rep = view.learn_metadata(metadata({1}, {denied}), 12, 2000, Source::kRefresher);
  EXPECT_NE(view.snapshot()->find_topic("payments"), nullptr);
}

TEST(MetadataViewRules, HintAdvancesViewAndCountsAsHint) {
  MetadataView view;
  learn_standard_cluster(view);
  LearnReport rep = view.learn_current_leader(TopicRef{"orders", {}}, 1, 3, 8, 2000, Source::kHint);
  EXPECT_EQ(rep.hints_learned, 1u);
  const PartitionEntry* e = view.snapshot()->find_partition("orders", 1);
  EXPECT_EQ(e->leader_id, 3);
  EXPECT_EQ(e->leader_epoch, 8);
  EXPECT_EQ(e->source, Source::kHint);
  ASSERT_TRUE(e->replica_set) << "replicas kept from the last Metadata";
  // By topic id as well.
  rep = view.learn_current_leader(TopicRef{"", uuid(1)}, 1, 1, 9, 2100, Source::kHint);
  EXPECT_EQ(rep.hints_learned, 1u);
  EXPECT_EQ(view.snapshot()->find_partition("orders", 1)->leader_id, 1);
  // An id the view cannot name is not stored: it is refreshed.
  rep = view.learn_current_leader(TopicRef{"", uuid(77)}, 0, 1, 1, 2100, Source::kHint);
  EXPECT_FALSE(rep.published);
  ASSERT_EQ(rep.urgent_refresh.size(), 1u);
  EXPECT_EQ(rep.urgent_refresh[0].id, uuid(77));
}

TEST(MetadataViewRules, EpochsNeverGoBackwardsUnderRandomLearnSequences) {
  // Property test (invariant 6): whatever order reports arrive in (Metadata
  // of any version, hints by name or id, leader errors), the epoch of a
  // (topic id, partition) never decreases and never becomes unknown again;
  // it only starts again when the topic id changes, or moves back when the
  // cluster confirmed a lower epoch enough times (a rollback, counted in the
  // snapshot; epoch_rollback_test.cc checks when those may happen).
  std::mt19937 rng(20240917);
  for (int round = 0; round < 300; ++round) {
    MetadataView view;
    int incarnation = 1;
    std::map<int32_t, int32_t> seen;  // partition -> highest epoch for the held id
    codec::Uuid held_id{};
    uint64_t rollbacks = 0;
    uint64_t now = 0;
    for (int step = 0; step < 150; ++step) {
      now += rng() % 50;
      const int32_t p = static_cast<int32_t>(rng() % 4);
      const int32_t leader = static_cast<int32_t>(rng() % 4) - 1;  // -1..2
      const int32_t epoch = static_cast<int32_t>(rng() % 12) - 1;  // -1..10
      const int kind = static_cast<int>(rng() % 10);
      if (kind == 0) ++incarnation;  // the topic is recreated: a new id from now on
      const codec::Uuid id = uuid(static_cast<uint8_t>(incarnation));
      if (kind <= 4) {
        const int16_t version = static_cast<int16_t>(rng() % 14);
        TopicSpec t{"topic", id, {PartSpec{p, leader, epoch, {0, 1, 2}}}};
        view.learn_metadata(metadata({0, 1, 2}, {t}), version, now,
                            rng() % 2 ? Source::kRefresher : Source::kMetadataResponse);
      } else if (kind <= 7) {
        view.learn_current_leader(TopicRef{"topic", rng() % 2 ? id : codec::Uuid{}}, p, leader,
                                  epoch, now, Source::kHint);
      } else {
        codec::ProduceResponse resp;
        auto& t = resp.responses.emplace_back();
        t.name = "topic";
        auto& pr = t.partition_responses.emplace_back();
        pr.index = p;
        pr.error_code = rng() % 2 ? codec::kErrNotLeaderOrFollower : codec::kErrFencedLeaderEpoch;
        if (rng() % 2)
          pr.current_leader = codec::ProduceResponse::LeaderIdAndEpoch{leader, epoch, {}};
        view.learn_from(resp, 10, static_cast<int32_t>(rng() % 3), now);
      }
      auto snap = view.snapshot();
      const TopicEntry* t = snap->find_topic("topic");
      if (!t) continue;
      if (t->id != held_id) {  // recreated (or the id was learned): epochs may start again
        seen.clear();
        held_id = t->id;
      }
      if (snap->epoch_rollbacks_total() != rollbacks) {  // the cluster confirmed a lower epoch
        seen.clear();
        rollbacks = snap->epoch_rollbacks_total();
      }
      for (const auto& [q, highest] : seen) {
        const PartitionEntry* e = t->partition(q);
        ASSERT_NE(e, nullptr) << "round " << round << " step " << step << ": entry vanished";
        ASSERT_GE(e->leader_epoch, highest)
            << "round " << round << " step " << step << " partition " << q;
      }
      for (int32_t q = 0; q < static_cast<int32_t>(t->partitions.size()); ++q) {
        const PartitionEntry* e = t->partition(q);
        if (e && e->leader_epoch >= 0) seen[q] = std::max(seen[q], e->leader_epoch);
      }
    }
  }
}

TEST(MetadataViewRules, ProduceResponseErrorsAndHints) {
  MetadataView view;
  learn_standard_cluster(view);
  codec::ProduceResponse resp;
  auto& t = resp.responses.emplace_back();
  t.name = "orders";
  // p0: NOT_LEADER from broker 1, which the view calls leader, no hint: doubted.
  auto& a = t.partition_responses.emplace_back();
  a.index = 0;
  a.error_code = codec::kErrNotLeaderOrFollower;
  // p1: NOT_LEADER with a newer hint: learned.
  auto& b = t.partition_responses.emplace_back();
  b.index = 1;
  b.error_code = codec::kErrNotLeaderOrFollower;
  b.current_leader = codec::ProduceResponse::LeaderIdAndEpoch{1, 8, {}};
  resp.node_endpoints = std::vector<codec::ProduceResponse::NodeEndpoint>{
      {1, "broker-1.upstream", 9092, std::nullopt, {}}, {7, "broker-7.upstream", 9092, "r", {}}};
  LearnReport rep = view.learn_from(resp, 10, 1, 2000);
  EXPECT_EQ(rep.hints_learned, 1u);
  EXPECT_EQ(rep.marked_suspect, 1u);
  EXPECT_EQ(rep.new_nodes, (std::vector<int32_t>{7}));
  ASSERT_EQ(rep.urgent_refresh.size(), 1u);
  auto snap = view.snapshot();
  EXPECT_TRUE(snap->find_partition("orders", 0)->doubted);
  EXPECT_EQ(snap->find_partition("orders", 1)->leader_epoch, 8);
  EXPECT_EQ(snap->find_node(7)->host, "broker-7.upstream");
}

TEST(MetadataViewRules, SuccessFromANonLeaderAsksForARefresh) {
  MetadataView view;
  learn_standard_cluster(view);
  codec::ProduceResponse resp;
  auto& t = resp.responses.emplace_back();
  t.name = "orders";
  t.partition_responses.emplace_back().index = 0;  // error 0 from broker 2; view says leader 1
  LearnReport rep = view.learn_from(resp, 9, 2, 2000);
  EXPECT_EQ(rep.urgent_refresh.size(), 1u);
  EXPECT_FALSE(rep.published);
  // From the leader itself: nothing to do, no lock, no snapshot.
  rep = view.learn_from(resp, 9, 1, 2000);
  EXPECT_TRUE(rep.urgent_refresh.empty());
  EXPECT_FALSE(rep.published);
}

TEST(MetadataViewRules, FetchAndShareResponsesTeachHintsAndNodes) {
  MetadataView view;
  learn_standard_cluster(view);
  codec::FetchResponse fr;
  auto& ft = fr.responses.emplace_back();
  ft.topic_id = uuid(1);
  auto& fp = ft.partitions.emplace_back();
  fp.partition_index = 2;
  fp.error_code = codec::kErrFencedLeaderEpoch;
  fp.current_leader = codec::FetchResponse::LeaderIdAndEpoch{1, 10, {}};
  LearnReport rep = view.learn_from(fr, 16, 3, 2000);
  EXPECT_EQ(rep.hints_learned, 1u);
  EXPECT_EQ(view.snapshot()->find_partition("orders", 2)->leader_id, 1);

  codec::ShareFetchResponse sr;
  auto& st = sr.responses.emplace_back();
  st.topic_id = uuid(2);
  auto& sp = st.partitions.emplace_back();
  sp.partition_index = 0;
  sp.error_code = codec::kErrNotLeaderOrFollower;
  sp.current_leader = {4, 4, {}};
  sr.node_endpoints.push_back({4, "broker-4.upstream", 9093, std::nullopt, {}});
  rep = view.learn_from(sr, 1, 2, 2100);
  EXPECT_EQ(rep.hints_learned, 1u);
  EXPECT_EQ(view.snapshot()->find_partition("payments", 0)->leader_id, 4);
  EXPECT_EQ(view.snapshot()->find_node(4)->port, 9093);

  codec::ShareAcknowledgeResponse ar;
  auto& at = ar.responses.emplace_back();
  at.topic_id = uuid(2);
  auto& ap = at.partitions.emplace_back();
  ap.partition_index = 0;
  ap.error_code = codec::kErrNotLeaderOrFollower;
  ap.current_leader = {-1, -1, {}};
  rep = view.learn_from(ar, 1, 4, 2200);
  EXPECT_TRUE(view.snapshot()->find_partition("payments", 0)->doubted)
      << "the leader the view names refused without a hint";

  codec::ListOffsetsResponse lr;
  auto& lt = lr.topics.emplace_back();
  lt.name = "orders";
  lt.partitions.emplace_back().error_code = codec::kErrUnknownLeaderEpoch;
  rep = view.learn_from(lr, 4, 1, 2300);
  EXPECT_EQ(rep.urgent_refresh.size(), 1u);
  EXPECT_FALSE(view.snapshot()->find_partition("orders", 0)->suspect())
      << "UNKNOWN_LEADER_EPOCH: the broker is behind, the view is not wrong";

  codec::OffsetForLeaderEpochResponse orr;
  auto& ot = orr.topics.emplace_back();
  ot.topic = "orders";
  ot.partitions.emplace_back().error_code = codec::kErrFencedLeaderEpoch;
  rep = view.learn_from(orr, 3, 1, 2400);
  EXPECT_EQ(rep.urgent_refresh.size(), 1u);
}

TEST(MetadataViewRules, SnapshotsAreImmutableAndShareUnchangedTopics) {
  MetadataView view;
  learn_standard_cluster(view);
  auto before = view.snapshot();
  const TopicEntry* payments_before = before->find_topic("payments");
  view.learn_current_leader(TopicRef{"orders", {}}, 0, 2, 6, 2000, Source::kHint);
  auto after = view.snapshot();
  EXPECT_EQ(before->find_partition("orders", 0)->leader_epoch, 5) << "old snapshot unchanged";
  EXPECT_EQ(after->find_partition("orders", 0)->leader_epoch, 6);
  EXPECT_EQ(after->find_topic("payments"), payments_before) << "unchanged topic shared, not copied";
  EXPECT_GT(after->generation(), before->generation());
}

TEST(MetadataViewRules, ConcurrentReadersSeeConsistentSnapshots) {
  MetadataView view;
  learn_standard_cluster(view);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::thread reader([&] {
    int32_t last = 0;
    while (!stop.load()) {
      auto s = view.snapshot();
      const PartitionEntry* e = s->find_partition("orders", 0);
      if (e) {
        EXPECT_GE(e->leader_epoch, last);
        last = e->leader_epoch;
      }
      reads++;
    }
  });
  // Start writing only once the reader runs, and keep it reading during the
  // writes: on a loaded machine the thread may otherwise start after them.
  while (reads.load() == 0) std::this_thread::yield();
  for (int32_t epoch = 6; epoch < 2000; ++epoch) {
    view.learn_current_leader(TopicRef{"orders", {}}, 0, epoch % 3 + 1, epoch, 2000 + epoch,
                              Source::kHint);
    if (epoch % 100 == 0) {
      uint64_t seen = reads.load();
      while (reads.load() == seen) std::this_thread::yield();
    }
  }
  stop = true;
  reader.join();
  EXPECT_EQ(view.snapshot()->find_partition("orders", 0)->leader_epoch, 1999);
  EXPECT_GT(reads.load(), 0u);
}

TEST(MetadataViewRules, DebugJsonListsTopicsPartitionsAndAges) {
  MetadataView view;
  learn_standard_cluster(view);
  std::string json = view.to_json(testing::kLearnedAt + 1500);
  EXPECT_NE(json.find("\"name\":\"orders\""), std::string::npos);
  EXPECT_NE(json.find("\"partition\":2,\"leader\":3,\"epoch\":9"), std::string::npos);
  EXPECT_NE(json.find("\"age_ms\":1500"), std::string::npos);
  EXPECT_NE(json.find("\"source\":\"refresher\""), std::string::npos);
  EXPECT_NE(json.find("\"partition_count\":4"), std::string::npos);
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.back(), '}');
}

}  // namespace
}  // namespace epochgate::policy
