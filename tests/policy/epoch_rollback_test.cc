// tests/policy/epoch_rollback_test.cc: a bogus leader epoch cannot pin the
// view (docs/architecture.md section 5, invariant 6). One report never moves an epoch
// backwards; repeated lower reports for the same topic id stop the entry's
// fencing, and policy.epoch_rollback_confirmations reports naming one leader
// and epoch move the entry back to them. A refresher answer that confirms the
// entry's epoch clears the tally, so a lagging broker never turns fencing off
// after a real leader move. Asserted through what a client would get (the
// fencing decision) and what /debug/metadata shows.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "policy_test_support.h"

namespace epochgate::policy {
namespace {

using testing::fetch_request;
using testing::metadata;
using testing::orders;
using testing::PartSpec;
using testing::Req;
using testing::TopicSpec;
using testing::uuid;

// The standard cluster (policy_test_support.h): orders p0 leader 1 epoch 5,
// topic id uuid(1), learned by the refresher at 1000 ms.
constexpr int32_t kTrueEpoch = 5;
constexpr int32_t kBogusEpoch = 105;

codec::MetadataResponse orders_p0(int32_t leader, int32_t epoch, codec::Uuid id = uuid(1)) {
  return metadata({1, 2, 3}, {TopicSpec{"orders", id, {PartSpec{0, leader, epoch, {1, 2, 3}}}}});
}

class EpochRollback : public ::testing::Test {
 protected:
  void SetUp() override { testing::learn_standard_cluster(view_); }

  /// What a Fetch v12 at `epoch` to the leader gets: the partition's decision.
  PartitionDecision fetch_at(int32_t epoch, uint64_t now) {
    auto snap = view_.snapshot();
    DecideContext ctx{*snap, policy_, 1, now, false};
    return decide(fetch_request(12, {orders({Req{0, epoch}})}), 12, ctx).partitions.at(0);
  }
  const PartitionEntry& entry() {
    snap_ = view_.snapshot();
    const PartitionEntry* e = snap_->find_partition("orders", 0);
    EXPECT_NE(e, nullptr);
    return *e;
  }
  LearnReport report(int32_t leader, int32_t epoch, uint64_t now, Source src) {
    return view_.learn_metadata(orders_p0(leader, epoch), 12, now, src);
  }

  MetadataView view_;
  CompiledPolicy policy_ = testing::default_policy();
  std::shared_ptr<const MetadataSnapshot> snap_;
};

TEST_F(EpochRollback, BogusEpochFromOneAnswerStopsFencingThenRollsBack) {
  LearnReport rep = report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  ASSERT_EQ(rep.epochs_advanced, 1u) << "a higher epoch moves forward on one report";
  EXPECT_EQ(fetch_at(kTrueEpoch, 2100).verdict, Verdict::kFence)
      << "the pin: a client at the true epoch is fenced";

  // First refresher answer at the true epoch: one report, the entry holds,
  // but the view asks for the confirmations that settle it.
  rep = report(1, kTrueEpoch, 2200, Source::kRefresher);
  EXPECT_EQ(rep.stale_ignored, 1u);
  EXPECT_EQ(rep.epochs_disputed, 0u);
  ASSERT_EQ(rep.urgent_refresh.size(), 1u);
  EXPECT_EQ(rep.urgent_refresh[0].name, "orders");
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch) << "one report never moves an epoch backwards";
  EXPECT_FALSE(entry().suspect());

  // Second: the cluster repeatedly disagrees: fencing stops at once.
  rep = report(1, kTrueEpoch, 2300, Source::kRefresher);
  EXPECT_EQ(rep.epochs_disputed, 1u);
  EXPECT_EQ(rep.marked_suspect, 1u);
  EXPECT_EQ(rep.epochs_rolled_back, 0u);
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch);
  EXPECT_TRUE(entry().disputed());
  EXPECT_FALSE(entry().hintable()) << "a disputed epoch is never told to a client";
  PartitionDecision d = fetch_at(kTrueEpoch, 2350);
  EXPECT_NE(d.verdict, Verdict::kFence) << "disputed entries never fence";
  EXPECT_EQ(d.reason, Reason::kSuspect);
  EXPECT_FALSE(rep.urgent_refresh.empty()) << "still gathering confirmations";

  // Third (the default epoch_rollback_confirmations): back to the cluster's epoch.
  rep = report(1, kTrueEpoch, 2400, Source::kRefresher);
  EXPECT_EQ(rep.epochs_rolled_back, 1u);
  EXPECT_TRUE(rep.urgent_refresh.empty()) << "settled: no more refreshes";
  const PartitionEntry& e = entry();
  EXPECT_EQ(e.leader_epoch, kTrueEpoch);
  EXPECT_EQ(e.leader_id, 1);
  EXPECT_FALSE(e.suspect());
  EXPECT_TRUE(e.hintable());
  EXPECT_EQ(e.rollbacks, 1u);
  EXPECT_EQ(e.rolled_back_from, kBogusEpoch);
  EXPECT_EQ(e.learned_at_ms, 2400u) << "the rolled-back entry is current, not stale";
  EXPECT_EQ(view_.snapshot()->epoch_rollbacks_total(), 1u);
  EXPECT_EQ(view_.snapshot()->epoch_disputes_total(), 1u);

  // Fencing works again, at the true epoch.
  EXPECT_NE(fetch_at(kTrueEpoch, 2500).verdict, Verdict::kFence);
  d = fetch_at(kTrueEpoch - 1, 2500);
  EXPECT_EQ(d.verdict, Verdict::kFence);
  EXPECT_EQ(d.hint_epoch, kTrueEpoch) << "the hint names the confirmed epoch, never the bogus one";

  // /debug/metadata shows what happened.
  std::string json = view_.to_json(2600);
  EXPECT_NE(json.find("\"epoch_rollbacks_total\":1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"epoch_disputes_total\":1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"rolled_back\":{\"count\":1,\"from_epoch\":105,\"served\":0,\"age_ms\":200}"),
            std::string::npos)
      << json;
}

TEST_F(EpochRollback, DebugJsonShowsTheLowerReportsWhileDisputed) {
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  report(2, kTrueEpoch, 2100, Source::kMetadataResponse);
  report(2, kTrueEpoch, 2200, Source::kRefresher);
  std::string json = view_.to_json(2300);
  EXPECT_NE(json.find("\"epoch\":105"), std::string::npos) << json;
  EXPECT_NE(json.find("\"suspect\":true,\"lower_reports\":{\"disputed\":true,\"reports\":2,"
                      "\"epoch\":5,\"leader\":2,\"agreeing\":2,\"served\":0}"),
            std::string::npos)
      << json;
}

TEST_F(EpochRollback, OneLowerReportNeverMovesAnEpochBackEvenAtTheMinimum) {
  view_.set_rollback_confirmations(1);  // below the floor: one report must never do it
  EXPECT_EQ(view_.rollback_confirmations(), 2u);
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  LearnReport rep = report(1, kTrueEpoch, 2100, Source::kRefresher);
  EXPECT_EQ(rep.epochs_rolled_back, 0u);
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch);
  rep = report(1, kTrueEpoch, 2200, Source::kRefresher);
  EXPECT_EQ(rep.epochs_rolled_back, 1u);
  EXPECT_EQ(entry().leader_epoch, kTrueEpoch);
}

TEST_F(EpochRollback, ConfirmationsAreConfigurable) {
  view_.set_rollback_confirmations(5);
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  for (int i = 0; i < 4; ++i) {
    LearnReport rep = report(1, kTrueEpoch, 2100 + 100 * i, Source::kRefresher);
    EXPECT_EQ(rep.epochs_rolled_back, 0u) << "report " << i + 1;
    EXPECT_EQ(entry().leader_epoch, kBogusEpoch);
    EXPECT_EQ(entry().disputed(), i >= 1) << "report " << i + 1;
  }
  EXPECT_EQ(report(1, kTrueEpoch, 2600, Source::kRefresher).epochs_rolled_back, 1u);
  EXPECT_EQ(entry().leader_epoch, kTrueEpoch);
}

TEST_F(EpochRollback, ALaggingBrokerNeverTurnsOffFencingAfterARealMove) {
  // A real move to epoch 6 on broker 2, then lagging brokers (KAFKA-9212)
  // still answer epoch 5 now and then, each time followed by a refresher
  // answer confirming 6: the entry keeps fencing the stale epoch throughout.
  report(2, 6, 2000, Source::kRefresher);
  for (int i = 0; i < 10; ++i) {
    uint64_t t = 2100 + 200 * static_cast<uint64_t>(i);
    LearnReport rep = report(1, 5, t, Source::kMetadataResponse);
    EXPECT_EQ(rep.epochs_disputed, 0u);
    EXPECT_EQ(fetch_at(5, t + 10).verdict, Verdict::kFence) << "round " << i;
    rep = report(2, 6, t + 100, Source::kRefresher);
    EXPECT_EQ(rep.leaders_confirmed, 1u);
    EXPECT_EQ(entry().lower.reports, 0) << "a refresher confirmation clears the tally";
  }
  EXPECT_EQ(entry().leader_epoch, 6);
  EXPECT_EQ(view_.snapshot()->epoch_rollbacks_total(), 0u);
}

TEST_F(EpochRollback, AClientMetadataConfirmingTheBogusEpochDoesNotClearTheDispute) {
  // Only the refresher (epochgate asking the cluster itself) clears a
  // dispute; a client that keeps talking to the dying broker does not.
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  report(1, kTrueEpoch, 2100, Source::kRefresher);
  report(1, kTrueEpoch, 2200, Source::kRefresher);
  ASSERT_TRUE(entry().disputed());
  report(1, kBogusEpoch, 2250, Source::kMetadataResponse);
  EXPECT_TRUE(entry().disputed());
  EXPECT_EQ(report(1, kTrueEpoch, 2300, Source::kRefresher).epochs_rolled_back, 1u);
}

TEST_F(EpochRollback, RollsBackOnlyToTheEpochReportedEnoughTimes) {
  // The cluster moves on while it disputes the bogus epoch (5, then 6):
  // both count against 105 (disputed after two), the rollback needs three
  // reports of the same leader and epoch, and goes to the newest.
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  report(1, 5, 2100, Source::kRefresher);
  report(2, 6, 2200, Source::kRefresher);
  EXPECT_TRUE(entry().disputed());
  report(1, 5, 2250, Source::kMetadataResponse);  // older than the candidate: no vote for 5
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch);
  report(2, 6, 2300, Source::kRefresher);
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch);
  LearnReport rep = report(2, 6, 2400, Source::kRefresher);
  EXPECT_EQ(rep.epochs_rolled_back, 1u);
  EXPECT_EQ(entry().leader_epoch, 6);
  EXPECT_EQ(entry().leader_id, 2);
  // Same epoch, another leader restarts the count for that pair.
  report(1, kBogusEpoch, 3000, Source::kMetadataResponse);
  report(2, 7, 3100, Source::kRefresher);
  report(3, 7, 3200, Source::kRefresher);
  report(3, 7, 3300, Source::kRefresher);
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch) << "only two reports named leader 3 at epoch 7";
  report(3, 7, 3400, Source::kRefresher);
  EXPECT_EQ(entry().leader_epoch, 7);
  EXPECT_EQ(entry().leader_id, 3);
  EXPECT_EQ(entry().rollbacks, 2u);
}

TEST_F(EpochRollback, AHigherEpochEndsTheDispute) {
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  report(1, 5, 2100, Source::kRefresher);
  report(1, 5, 2200, Source::kRefresher);
  ASSERT_TRUE(entry().disputed());
  report(2, kBogusEpoch + 1, 2300, Source::kRefresher);
  EXPECT_FALSE(entry().suspect());
  EXPECT_EQ(entry().lower.reports, 0);
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch + 1);
}

TEST_F(EpochRollback, LowerReportsWithoutTopicIdsNeverRollBack) {
  // Metadata v9 carries epochs but no topic ids: a lower epoch may be a
  // recreated topic, so the entry is doubted (no fencing) but its epoch
  // stays until a report with ids decides.
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  for (int i = 0; i < 5; ++i) {
    LearnReport rep =
        view_.learn_metadata(orders_p0(1, kTrueEpoch, {}), 9, 2100 + i, Source::kRefresher);
    EXPECT_EQ(rep.epochs_rolled_back, 0u);
  }
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch);
  EXPECT_TRUE(entry().suspect());
}

TEST_F(EpochRollback, AnotherIncarnationsReportsDoNotCount) {
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  report(1, kTrueEpoch, 2100, Source::kRefresher);
  // The topic is recreated: its epochs start again, the old tally is gone.
  LearnReport rep = view_.learn_metadata(orders_p0(2, 0, uuid(9)), 12, 2200, Source::kRefresher);
  EXPECT_EQ(rep.topics_recreated, 1u);
  EXPECT_EQ(entry().leader_epoch, 0);
  EXPECT_EQ(entry().lower.reports, 0);
  EXPECT_EQ(entry().rollbacks, 0u);
}

TEST_F(EpochRollback, LowerCurrentLeaderHintsCountAsReports) {
  // KIP-951 CurrentLeader in a Fetch v13+ response names the topic by id:
  // a broker's hint at the true epoch counts like a Metadata report.
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  for (int i = 0; i < 3; ++i)
    view_.learn_current_leader(TopicRef{"", uuid(1)}, 0, 1, kTrueEpoch, 2100 + i, Source::kHint);
  EXPECT_EQ(entry().leader_epoch, kTrueEpoch);
  EXPECT_EQ(entry().rollbacks, 1u);
  // A hint by name only cannot tell incarnations apart: it only doubts.
  report(1, kBogusEpoch, 3000, Source::kMetadataResponse);
  for (int i = 0; i < 3; ++i)
    view_.learn_current_leader(TopicRef{"orders", {}}, 0, 1, kTrueEpoch, 3100 + i, Source::kHint);
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch);
  EXPECT_TRUE(entry().suspect());
}

TEST(EpochRollbackProperty, AnEpochOnlyDecreasesAfterEnoughReportsNamedIt) {
  // Invariant 6 under random report sequences: an epoch for one topic id
  // never decreases on a report that does not name the new (leader, epoch),
  // and only after at least rollback_confirmations reports named exactly it
  // since the old epoch was set.
  std::mt19937 rng(7341);
  uint64_t rollbacks = 0;
  for (uint32_t needed : {2u, 3u, 4u}) {
    for (int round = 0; round < 200; ++round) {
      MetadataView view;
      view.set_rollback_confirmations(needed);
      view.learn_metadata(orders_p0(0, 0), 12, 0, Source::kRefresher);  // names uuid(1)
      std::vector<std::pair<int32_t, int32_t>> since;  // reports since the epoch was set
      int32_t held = 0;
      uint64_t now = 0;
      for (int step = 0; step < 120; ++step) {
        now += 1 + rng() % 50;
        const int32_t leader = static_cast<int32_t>(rng() % 3);
        const int32_t epoch = static_cast<int32_t>(rng() % 8) * (rng() % 4 == 0 ? 20 : 1);
        const Source src = rng() % 2 ? Source::kRefresher : Source::kMetadataResponse;
        if (rng() % 3 == 0) {
          view.learn_current_leader(TopicRef{"", uuid(1)}, 0, leader, epoch, now, Source::kHint);
        } else {
          view.learn_metadata(orders_p0(leader, epoch), 12, now, src);
        }
        since.emplace_back(leader, epoch);
        const PartitionEntry* e = view.snapshot()->find_partition("orders", 0);
        ASSERT_NE(e, nullptr);
        if (held >= 0 && e->leader_epoch < held) {
          ASSERT_EQ(std::make_pair(e->leader_id, e->leader_epoch), since.back())
              << "moved back on a report that named something else";
          size_t named = 0;
          for (const auto& r : since) named += r == since.back() ? 1 : 0;
          ASSERT_GE(named, needed) << "rolled back after " << named << " reports";
        }
        if (e->leader_epoch != held) {
          held = e->leader_epoch;
          since.clear();
        }
      }
      rollbacks += view.snapshot()->epoch_rollbacks_total();
    }
  }
  EXPECT_GT(rollbacks, 100u) << "the sequences must exercise rollbacks, not only advances";
}

// The leader serving a request at the lower epoch (KIP-320: a broker answers
// another epoch than its own with FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH)
// is the cluster itself saying the view's epoch is wrong.
TEST_F(EpochRollback, OneServedRequestAtTheLowerEpochStopsFencingAtOnce) {
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  ASSERT_EQ(fetch_at(kTrueEpoch, 2100).verdict, Verdict::kFence);
  LearnReport rep = view_.learn_served({{TopicRef{"", uuid(1)}, 0, kTrueEpoch}}, 1, 2200);
  EXPECT_EQ(rep.epochs_disputed, 1u);
  EXPECT_TRUE(entry().disputed()) << "one served request disputes, where Metadata needs two";
  EXPECT_EQ(entry().lower.served, 1u);
  EXPECT_NE(fetch_at(kTrueEpoch, 2300).verdict, Verdict::kFence);
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch) << "one report never moves an epoch backwards";
  // Two more served requests at (1, 5) make the 3 confirmations.
  view_.learn_served({{TopicRef{"", uuid(1)}, 0, kTrueEpoch}}, 1, 2400);
  rep = view_.learn_served({{TopicRef{"", uuid(1)}, 0, kTrueEpoch}}, 1, 2500);
  EXPECT_EQ(rep.epochs_rolled_back, 1u);
  EXPECT_EQ(entry().leader_epoch, kTrueEpoch);
  EXPECT_EQ(entry().leader_id, 1);
  EXPECT_EQ(entry().source, Source::kServed);
  EXPECT_EQ(entry().rolled_back_served, 3u);
  EXPECT_EQ(fetch_at(kTrueEpoch - 1, 2600).verdict, Verdict::kFence) << "fencing is back";
  EXPECT_NE(view_.to_json(2600).find("\"served\":3"), std::string::npos) << view_.to_json(2600);
}

TEST_F(EpochRollback, AServingFollowerNeverReplacesTheCandidateLeader) {
  // KIP-392: a follower serves Fetch at the partition's epoch too; it tells
  // the epoch, not who leads.
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  report(1, kTrueEpoch, 2100, Source::kMetadataResponse);  // candidate (1, 5)
  for (int i = 0; i < 5; ++i) view_.learn_served({{TopicRef{"orders", uuid(1)}, 0, kTrueEpoch}}, 2, 2200);
  EXPECT_EQ(entry().leader_epoch, kBogusEpoch) << "served by node 2, candidate leader 1";
  EXPECT_EQ(entry().lower.leader, 1);
  EXPECT_TRUE(entry().disputed());
}

TEST_F(EpochRollback, ServedAtOrAboveTheViewsEpochChangesNothing) {
  auto before = view_.snapshot();
  LearnReport rep = view_.learn_served({{TopicRef{"orders", uuid(1)}, 0, kTrueEpoch},
                                        {TopicRef{"orders", uuid(1)}, 0, kTrueEpoch + 1}},
                                       1, 2000);
  EXPECT_FALSE(rep.published);
  EXPECT_EQ(view_.snapshot(), before);
}

TEST_F(EpochRollback, ServedByNameOnlyDoubtsUntilARefresh) {
  // Without a topic id a lower epoch may be a recreated topic: stop fencing,
  // tally nothing, ask the refresher.
  report(1, kBogusEpoch, 2000, Source::kMetadataResponse);
  LearnReport rep = view_.learn_served({{TopicRef{"orders", {}}, 0, kTrueEpoch}}, 1, 2100);
  EXPECT_TRUE(entry().doubted);
  EXPECT_EQ(entry().lower.reports, 0u);
  ASSERT_EQ(rep.urgent_refresh.size(), 1u);
  EXPECT_NE(fetch_at(kTrueEpoch, 2200).verdict, Verdict::kFence);
}

}  // namespace
}  // namespace epochgate::policy
