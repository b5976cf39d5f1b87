// proxy/reroute/rerouter_gap.cc: a leader that refused a rerouted write
// across its own takeover. epochgate's view can learn "leader L, epoch N"
// from the old leader's hint a few milliseconds before L applies the
// election itself (Kafka 4.4.0): the first write of a producer's stream
// rerouted to L is refused NOT_LEADER_OR_FOLLOWER, and the later ones of the
// stream, sent behind it on the same connection and arriving once L leads,
// OUT_OF_ORDER_SEQUENCE_NUMBER (a gap: the first is missing). Neither error
// stores anything. The writes of such a run are held together and, once
// every later write of the stream sent to L has answered and one showed
// the takeover (OUT_OF_ORDER_SEQUENCE_NUMBER), sent to L again in their
// order, on the one connection (each request's answer then merges as any
// reroute's). A run of refusals only, from a broker the view has since seen
// replaced by a leader with a strictly newer epoch, was refused by a stale
// view's pick, not across a takeover: it takes its one more hop to that
// leader together, in order (a client that never moves by itself pipelines
// several writes to the old listener, and each one's refusal alone would
// reach it as an error). Anything that may have been stored, a closed session or
// reroute.max_hold_ms passing settles the gap with today's answers (the
// client resends in order). Must never: resend a write that may have been
// stored, hold an OUT_OF_ORDER_SEQUENCE_NUMBER that is not behind a refused
// write of its stream at the same leader, or hold anything past
// reroute.max_hold_ms.
#include <spdlog/spdlog.h>
#include <uv.h>

#include <algorithm>

#include "codec/kafka_errors.h"
#include "metrics/proxy_metrics.h"
#include "metrics/reroute_metrics.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/in_flight_request.h"
#include "proxy/net/clock.h"
#include "proxy/reroute/rerouter.h"

namespace epochgate::proxy {
namespace {

constexpr const char* kResent = "resent";
constexpr const char* kOneMoreHop = "one_more_hop";

const policy::StreamKey* key_of(const RerouteState& st, size_t t) {
  for (const RerouteStream& s : st.plan->streams)
    if (s.target == static_cast<int>(t)) return &s.key;
  return nullptr;
}

bool sink_alive(const RerouteState& st) {
  std::shared_ptr<RerouteSink> sink = st.sink.lock();
  return sink && sink->alive;
}

void finish_and_flush(RerouteState& st) {
  std::shared_ptr<RerouteSink> sink = st.sink.lock();
  if (!sink || !sink->alive) return;
  if (finish_rerouted(*st.entry) && sink->flush) sink->flush();
}

}  // namespace

bool Rerouter::gap_hold(const std::shared_ptr<RerouteState>& st, int32_t leader, int leg_part,
                        size_t t, RerouteState::PartitionAnswer& part) {
  const RerouteTargetPart& tp = st->plan->targets[t];
  const policy::StreamKey* key = key_of(*st, t);
  if (key == nullptr) return false;
  auto it = std::find_if(gaps_.begin(), gaps_.end(), [&](const SequenceGap& g) {
    return g.leader == leader && g.key == *key;
  });
  const bool refused = part.error_code == codec::kErrNotLeaderOrFollower;
  const bool past_gap = part.error_code == codec::kErrOutOfOrderSequenceNumber;
  const bool alive = sink_alive(*st) && leg_part >= 0 && !closed_;
  SequenceGap* g = nullptr;
  if (it == gaps_.end()) {
    // Opens on a refusal with a later write of the stream sent behind it to
    // the same leader; an OUT_OF_ORDER_SEQUENCE_NUMBER alone is the
    // leader's own answer and goes to the client as it came.
    const uint32_t hold_ms = ctx_.config->reroute.max_hold_ms;
    if (!refused || tp.gap_resent || !alive || !enabled() || hold_ms == 0 ||
        !guard_.later_rerouted_to(st->ticket, *key, leader))
      return false;
    g = &gaps_.emplace_back();
    g->key = *key;
    g->leader = leader;
    g->epoch = tp.leader_epoch;
    g->first = st->ticket;
    g->until_ns = now_ns() + uint64_t{hold_ms} * 1000000;
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&wait_timer_)))
      uv_timer_start(&wait_timer_, &Rerouter::on_wait_timer, 2, 2);
  } else {
    g = &*it;
    if (st->ticket <= g->first) return false;
    if (!alive) {
      // Not held, so not resent: a resend of the rest would leave a gap.
      if (g->spoiled == nullptr) g->spoiled = "closed";
      return false;
    }
    if ((!refused && !past_gap) || tp.gap_resent) {
      // Stored (a success, DUPLICATE_SEQUENCE_NUMBER) or perhaps stored:
      // the earlier ones may not follow it.
      g->spoiled = "stored";
      return false;
    }
  }
  if (past_gap) g->proven = true;
  SequenceGap::Member m;
  m.st = st;
  m.target = t;
  m.part = leg_part;
  if (!refused) {
    st->keep_bytes(part);
    m.answer = std::move(part);
  }
  g->members.push_back(std::move(m));
  st->gap_holds.push_back(leg_part);
  // It stays rerouted to `leader` in the guard: a direct write of the
  // stream waits behind it, and a later write epochgate reroutes to the same
  // leader still goes, on the same connection (ahead of the resend: it is
  // refused past the same gap and joins, or it is stored and spoils it).
  return true;
}

void Rerouter::gap_failed(const RerouteState& st, int32_t leader, size_t t) {
  const policy::StreamKey* key = key_of(st, t);
  if (key == nullptr) return;
  for (SequenceGap& g : gaps_)
    if (g.leader == leader && g.key == *key && st.ticket > g.first) g.spoiled = "stored";
}

const char* Rerouter::gap_outcome(SequenceGap& g, uint64_t now, int32_t& to, int32_t& epoch) {
  for (const SequenceGap::Member& m : g.members)
    if (!sink_alive(*m.st)) return "closed";
  if (g.spoiled != nullptr) return g.spoiled;
  // Complete once every later write of the stream rerouted to the leader
  // is held here (the others are unanswered; a spoiling one ended first).
  const bool complete = guard_.rerouted_to_after(g.first, g.key, g.leader) + 1 == g.members.size();
  // Refusals alone do not show the leader took over; a later write the
  // client sends meanwhile, rerouted there and refused past the gap, does
  // (Kafka 4.4.0: three refusals, then two such writes 25-50 ms later).
  if (complete && g.proven) {
    const RerouteTargetPart& tp = g.members.front().st->plan->targets[g.members.front().target];
    // Its OUT_OF_ORDER_SEQUENCE_NUMBER shows the refusing broker leads now;
    // the view must still name it (at the epoch the first went under or
    // later), else a refresh may.
    auto names_leader = [&](bool refresh) {
      int32_t leader = -1;
      return ctx_.fencing != nullptr &&
             ctx_.fencing->leader_of(tp.topic, tp.topic_id, tp.partition, leader, epoch,
                                     refresh) &&
             leader == g.leader && (g.epoch < 0 || epoch >= g.epoch);
    };
    if (names_leader(false)) {
      to = g.leader;
      return kResent;
    }
    if (!g.refreshed) {
      g.refreshed = true;
      names_leader(true);
    }
  }
  if (complete && !g.proven && first_hops(g)) {
    // Refusals only, none stored: if the view names another leader at a
    // strictly newer epoch than the first went under (the one more hop's
    // rule, newer_leader), the refusing broker was a stale pick.
    const SequenceGap::Member& first = g.members.front();
    auto newer = [&](bool refresh) {
      const int32_t leader = newer_leader(*first.st, first.target, refresh, epoch);
      if (leader < 0 || leader == g.leader) return false;
      to = leader;
      return true;
    };
    if (newer(false)) return kOneMoreHop;
    if (!g.refreshed) {
      g.refreshed = true;
      newer(true);
    }
  }
  if (now >= g.until_ns) return complete && !g.proven ? "unproven" : "hold_timeout";
  return nullptr;
}

bool Rerouter::first_hops(const SequenceGap& g) {
  for (const SequenceGap::Member& m : g.members)
    if (m.answer || m.st->plan->targets[m.target].hop >= 2) return false;
  return true;
}

void Rerouter::settle_gap(SequenceGap& g, const char* outcome, int32_t to, int32_t epoch) {
  std::stable_sort(g.members.begin(), g.members.end(),
                   [](const SequenceGap::Member& a, const SequenceGap::Member& b) {
                     return a.st->ticket < b.st->ticket;
                   });
  bool resend = outcome == kResent || outcome == kOneMoreHop;
  // A member whose part another held target shares needs a part of its own
  // for the resend; without room the whole run falls back (no hole in it).
  for (const SequenceGap::Member& m : g.members)
    if (resend && std::count(m.st->gap_holds.begin(), m.st->gap_holds.end(), m.part) > 1 &&
        m.st->entry->part_count() >= InFlightRequest::kMaxParts) {
      resend = false;
      outcome = "no_room";
    }
  if (ctx_.metrics) ctx_.metrics->reroute().sequence_gap(outcome);
  spdlog::debug("reroute: {} write(s) of {}[{}] pid {} refused by node {} across its takeover: {}",
                g.members.size(), g.key.topic, g.key.partition, g.key.producer_id, g.leader,
                outcome);
  for (SequenceGap::Member& m : g.members) {
    RerouteState& st = *m.st;
    if (resend) {
      move_target(st, m.target, to, epoch);
      st.plan->targets[m.target].gap_resent = true;
      const int reuse = st.release_hold(m.part) ? m.part : -1;
      send_legs(m.st, *st.entry, {m.target}, reuse);
      finish_and_flush(st);  // a send that failed answered its part
      continue;
    }
    // Today's answers: the refusal (epochgate's NOT_LEADER_OR_FOLLOWER plus
    // hint stays) or the leader's own OUT_OF_ORDER_SEQUENCE_NUMBER.
    guard_.reroute_answered(st.ticket, g.key);
    if (m.answer) {
      st.answers[m.target] = std::move(*m.answer);
      if (ctx_.metrics) ctx_.metrics->reroute().delivered(1);
    } else {
      fell_back("second_hop");
    }
    if (st.release_hold(m.part) && sink_alive(st)) {
      st.entry->answer_part(static_cast<size_t>(m.part));
      finish_and_flush(st);
    }
  }
  report();
  wake_order_waiters();
}

void Rerouter::check_gaps() {
  if (gaps_.empty()) return;
  const uint64_t now = now_ns();
  for (size_t i = 0; i < gaps_.size();) {
    int32_t to = -1, epoch = -1;
    const char* outcome = gap_outcome(gaps_[i], now, to, epoch);
    if (outcome == nullptr) {
      ++i;
      continue;
    }
    SequenceGap g = std::move(gaps_[i]);
    gaps_.erase(gaps_.begin() + static_cast<std::ptrdiff_t>(i));
    settle_gap(g, outcome, to, epoch);
  }
}

void Rerouter::close_gaps() {
  std::vector<SequenceGap> gaps = std::move(gaps_);
  gaps_.clear();
  for (SequenceGap& g : gaps) settle_gap(g, "closed", -1, -1);
}

}  // namespace epochgate::proxy
