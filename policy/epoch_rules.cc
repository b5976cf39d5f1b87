// policy/epoch_rules.cc
#include "policy/epoch_rules.h"

#include "policy/epoch_dispute.h"

namespace epochgate::policy::epoch_rules {

PartitionEntry* slot(TopicEntry& t, int32_t partition) {
  if (partition < 0 || partition > kMaxPartitionIndex) return nullptr;
  if (static_cast<size_t>(partition) >= t.partitions.size())
    t.partitions.resize(static_cast<size_t>(partition) + 1);
  return &t.partitions[static_cast<size_t>(partition)];
}

void doubt(PartitionEntry& e, LearnReport& rep) {
  if (!e.suspect()) rep.marked_suspect++;
  e.doubted = true;
}

Confirmation confirmation(const PartitionEntry& e, int32_t leader, int32_t epoch, Source src) {
  // Mirrors apply() below: the branches that touch nothing but
  // learned_at_ms and source (and replica_set, which the caller checks).
  if (!e.known || leader != e.leader_id) return Confirmation::kNo;
  if (epoch >= 0) {
    if (e.leader_epoch != epoch) return Confirmation::kNo;
    // The refresher's confirmation clears a doubt and lower reports.
    if (src == Source::kRefresher && ((e.doubted && !e.conflicted) || !e.lower.none()))
      return Confirmation::kNo;
    return Confirmation::kStamp;
  }
  return e.leader_epoch < 0 ? Confirmation::kStamp : Confirmation::kNothing;
}

bool apply(PartitionEntry& e, const Incoming& in, Source src, uint64_t now_ms, LearnReport& rep,
           bool& advanced, uint32_t rollback_needed) {
  advanced = false;
  if (!e.known) {
    e = PartitionEntry{};
    e.known = true;
    e.leader_id = in.leader;
    e.leader_epoch = in.epoch;
    e.learned_at_ms = now_ms;
    // changed_at_ms stays 0: a first sighting is no evidence of a move.
    e.source = src;
    e.replica_set = in.replicas;
    rep.partitions_learned++;
    // A leader without an epoch (an old client's Metadata) cannot fence: have
    // the refresher, at epochgate's own version, learn the epoch now rather
    // than at the next periodic refresh.
    if (in.epoch < 0 && in.leader >= 0 && src != Source::kRefresher) {
      rep.learned_without_epoch++;
      return true;
    }
    return false;
  }
  if (in.epoch >= 0) {
    if (e.leader_epoch < 0 || in.epoch > e.leader_epoch) {
      e.leader_id = in.leader;
      e.leader_epoch = in.epoch;
      e.conflicted = false;
      e.doubted = false;
      e.lower = {};
      e.learned_at_ms = now_ms;
      e.changed_at_ms = now_ms;
      e.source = src;
      if (in.replicas) e.replica_set = in.replicas;
      rep.epochs_advanced++;
      advanced = true;
      return false;
    }
    if (in.epoch == e.leader_epoch) {
      if (in.leader == e.leader_id || e.leader_id < 0) {
        // Agreement (or a leader reappearing at the epoch the view saw
        // without one): the entry is current again.
        e.leader_id = in.leader;
        e.learned_at_ms = now_ms;
        e.source = src;
        if (in.replicas) e.replica_set = in.replicas;
        if (src == Source::kRefresher) {
          if (e.doubted && !e.conflicted) e.doubted = false;
          // The cluster, asked directly, still says this epoch: earlier lower
          // reports were lagging brokers.
          e.lower = {};
        }
        rep.leaders_confirmed++;
        return false;
      }
      if (in.leader < 0) {
        // Same epoch, no leader: the leader is not reachable on that broker's
        // listener. Keep the leader, stop fencing on it until confirmed.
        doubt(e, rep);
        return true;
      }
      // Same epoch, two leaders: neither may be told to a client.
      if (!e.suspect()) rep.marked_suspect++;
      e.conflicted = true;
      e.leader_id = in.leader;
      e.learned_at_ms = now_ms;
      e.changed_at_ms = now_ms;
      e.source = src;
      if (in.replicas) e.replica_set = in.replicas;
      return true;
    }
    rep.stale_ignored++;
    if (!in.ids_verified) {
      // Lower epoch and no topic ids to tell a lagging broker from a
      // recreated topic: stop fencing until a refresh (with ids) decides.
      doubt(e, rep);
      return true;
    }
    return detail::note_lower(e, detail::LowerReport{in.leader, in.epoch, in.replicas, src}, now_ms,
                              rollback_needed, rep);
  }
  // The report has no epoch (Metadata < v7, or a leaderless -1/-1).
  if (e.leader_epoch < 0) {
    // Neither side has an epoch: nothing to order by, keep the latest. Such
    // an entry never fences.
    const bool moved = e.leader_id != in.leader;
    if (moved) e.changed_at_ms = now_ms;
    e.leader_id = in.leader;
    e.learned_at_ms = now_ms;
    e.source = src;
    if (in.replicas) e.replica_set = in.replicas;
    // An old client saw the leader move: learn the epoch that lets the view
    // fence writes still aimed at the old leader.
    if (moved && in.leader >= 0 && src != Source::kRefresher) {
      rep.learned_without_epoch++;
      return true;
    }
    return false;
  }
  if (in.leader == e.leader_id) return false;  // consistent, but too weak to reset the age
  doubt(e, rep);
  // An old client saw the leader move away from the one the view fences
  // for: until a refresh confirms it, the entry fences nothing, so the
  // refresher learns the new epoch now (rate-bounded per topic).
  if (in.leader >= 0 && src != Source::kRefresher) rep.learned_without_epoch++;
  return true;
}

}  // namespace epochgate::policy::epoch_rules
