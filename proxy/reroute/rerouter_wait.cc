// proxy/reroute/rerouter_wait.cc: rerouted writes waiting for a leader the view does
// not name yet: a broker's NOT_LEADER_OR_FOLLOWER for a forwarded write
// (after_broker_answer puts it in `waiting_`, polled here and looked at
// again when the view learns a refresh), and the one more hop of a
// rerouted write whose leader
// (named by epochgate's view, which may be stale: a client that never moves
// by itself keeps writing to the first broker while the leader moves on)
// answered NOT_LEADER_OR_FOLLOWER. The write goes on to the leader the view
// names with a strictly newer leader epoch, now or once an urgent refresh
// names one within reroute.max_wait_ms. At most two hops per partition; the
// write stays rerouted in the order guard (now to its new leader) the whole
// time, so later writes of its stream wait behind it. Must never send a
// partition a third time or to a leader that is not newer.
#include <uv.h>

#include "metrics/proxy_metrics.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/in_flight_request.h"
#include "proxy/net/clock.h"
#include "proxy/reroute/rerouter.h"

namespace epochgate::proxy {

void Rerouter::on_wait_timer(uv_timer_t* t) { static_cast<Rerouter*>(t->data)->check_waiting(); }

void Rerouter::check_waiting() {
  uint64_t now = now_ns();
  std::vector<std::weak_ptr<RerouteState>> still;
  std::vector<std::shared_ptr<RerouteState>> due;
  for (auto& w : waiting_) {
    std::shared_ptr<RerouteState> st = w.lock();
    if (!st) continue;
    bool all_known = true;
    for (size_t i : st->waiting) all_known = all_known && new_leader(*st, i, false) >= 0;
    if (all_known || now >= st->wait_until_ns) due.push_back(std::move(st));
    else still.push_back(std::move(w));
  }
  waiting_ = std::move(still);
  for (auto& st : due) {
    std::shared_ptr<RerouteSink> sink = st->sink.lock();
    bool alive = sink && sink->alive;
    std::vector<std::pair<size_t, int32_t>> picks;
    size_t unknown = 0;
    for (size_t i : st->waiting) {
      int32_t leader = new_leader(*st, i, false);
      if (leader >= 0 && alive) picks.emplace_back(i, leader);
      else ++unknown;
    }
    st->waiting.clear();
    // The wait is over: retarget() ends the picked writes' client path and
    // enters them as rerouted in one step; the rest leave it after.
    fell_back("no_leader", unknown);
    if (!alive) {
      direct_answered(*st);
      continue;
    }
    InFlightRequest& e = *st->entry;
    std::vector<size_t> made = picks.empty() ? std::vector<size_t>{} : retarget(*st, picks);
    direct_answered(*st);
    if (!made.empty()) send_legs(st, e, made);
    e.answer_part(static_cast<size_t>(st->wait_part));
    if (finish_rerouted(e) && sink->flush) sink->flush();
  }
  check_rehops();
  check_gaps();
  if (waiting_.empty() && rehops_.empty() && gaps_.empty() && !closed_) uv_timer_stop(&wait_timer_);
  report();
}

int32_t Rerouter::newer_leader(const RerouteState& st, size_t t, bool refresh, int32_t& epoch) {
  const RerouteTargetPart& tp = st.plan->targets[t];
  int32_t leader = -1;
  epoch = -1;
  if (ctx_.fencing == nullptr ||
      !ctx_.fencing->leader_of(tp.topic, tp.topic_id, tp.partition, leader, epoch, refresh))
    return -1;
  if (leader < 0) return -1;
  // A refresh learned since the refusal that names the same leader at the
  // same epoch: the refusal came inside the move (the view learned it just
  // before the leader took over); the one more hop goes to it again.
  if (st.rehop_refreshed && leader == tp.leader && epoch >= 0 && epoch == tp.leader_epoch)
    return leader;
  if (leader == tp.leader) return -1;
  // Strictly newer than what the first hop was sent under: a view that only
  // disagrees (or an unknown epoch) is no reason for another hop.
  if (tp.leader_epoch < 0 || epoch <= tp.leader_epoch) return -1;
  return leader;
}

void Rerouter::move_target(RerouteState& st, size_t t, int32_t leader, int32_t epoch) {
  RerouteTargetPart& tp = st.plan->targets[t];
  tp.leader = leader;
  tp.leader_epoch = epoch;
  tp.hop = 2;
  for (const RerouteStream& s : st.plan->streams)
    if (s.target == static_cast<int>(t)) guard_.rehop(st.ticket, s.key, leader);
}

void Rerouter::rehop(const std::shared_ptr<RerouteState>& st, const std::vector<size_t>& idx,
                     bool alive) {
  auto give_up = [this, &st](size_t t) {
    fell_back("second_hop");
    for (const RerouteStream& s : st->plan->streams)
      if (s.target == static_cast<int>(t)) guard_.reroute_answered(st->ticket, s.key);
  };
  if (!alive || closed_) {
    for (size_t t : idx) give_up(t);
    return;
  }
  InFlightRequest& e = *st->entry;
  std::vector<size_t> now;
  bool known = false;
  // Only a refresh learned from here on counts (see newer_leader).
  if (st->rehop_waiting.empty()) st->rehop_refreshed = false;
  for (size_t t : idx) {
    int32_t epoch = -1;
    int32_t leader = newer_leader(*st, t, false, epoch);
    // Behind rehops still waiting for their leader, a known one waits too:
    // check_rehops sends them all in the order their refusals came.
    if (leader >= 0 && rehops_.empty() && st->rehop_waiting.empty()) {
      move_target(*st, t, leader, epoch);
      now.push_back(t);
      continue;
    }
    // Not known yet: refresh now and keep the answer back (its part open).
    if (ctx_.config->reroute.max_wait_ms == 0) {
      give_up(t);
      continue;
    }
    if (st->rehop_part < 0) {
      st->rehop_part = e.add_part(RequestPart::Source::kReroute);
      if (st->rehop_part < 0) {
        give_up(t);
        continue;
      }
      st->rehop_until_ns = now_ns() + uint64_t{ctx_.config->reroute.max_wait_ms} * 1000000;
      rehops_.push_back(st);
    }
    if (leader >= 0) known = true;
    else newer_leader(*st, t, true, epoch);
    // Until the hop goes, its stream is rerouted to no leader: a later write
    // of it waits wherever it was planned to go, so it cannot reach the
    // leader that refused this one (or the next one) ahead of the hop.
    for (const RerouteStream& s : st->plan->streams)
      if (s.target == static_cast<int>(t)) guard_.rehop(st->ticket, s.key, -1);
    st->rehop_waiting.push_back(t);
  }
  if (!now.empty()) send_legs(st, e, now);
  if (known) uv_timer_start(&wait_timer_, &Rerouter::on_wait_timer, 0, 2);
  else if (!st->rehop_waiting.empty() && !uv_is_active(reinterpret_cast<uv_handle_t*>(&wait_timer_)))
    uv_timer_start(&wait_timer_, &Rerouter::on_wait_timer, 2, 2);
}

void Rerouter::check_rehops() {
  if (rehops_.empty()) return;
  uint64_t now = now_ns();
  std::vector<std::weak_ptr<RerouteState>> still;
  std::vector<std::shared_ptr<RerouteState>> due;
  for (auto& w : rehops_) {
    std::shared_ptr<RerouteState> st = w.lock();
    if (!st) continue;
    bool all_known = true;
    for (size_t t : st->rehop_waiting) {
      int32_t epoch = -1;
      all_known = all_known && newer_leader(*st, t, false, epoch) >= 0;
    }
    // In order: a rehop never overtakes one that still waits.
    if (still.empty() && (all_known || now >= st->rehop_until_ns)) due.push_back(std::move(st));
    else still.push_back(std::move(w));
  }
  rehops_ = std::move(still);
  for (auto& st : due) {
    std::shared_ptr<RerouteSink> sink = st->sink.lock();
    bool alive = sink && sink->alive;
    std::vector<size_t> go;
    for (size_t t : st->rehop_waiting) {
      int32_t epoch = -1;
      int32_t leader = alive ? newer_leader(*st, t, false, epoch) : -1;
      if (leader >= 0) {
        move_target(*st, t, leader, epoch);
        go.push_back(t);
      } else {
        fell_back("second_hop");
        for (const RerouteStream& s : st->plan->streams)
          if (s.target == static_cast<int>(t)) guard_.reroute_answered(st->ticket, s.key);
      }
    }
    st->rehop_waiting.clear();
    int part = st->rehop_part;
    st->rehop_part = -1;
    if (!alive) continue;
    InFlightRequest& e = *st->entry;
    if (!go.empty()) send_legs(st, e, go);
    e.answer_part(static_cast<size_t>(part));
    if (finish_rerouted(e) && sink->flush) sink->flush();
  }
  if (!due.empty()) wake_order_waiters();
}

}  // namespace epochgate::proxy
