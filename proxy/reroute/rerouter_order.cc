// proxy/reroute/rerouter_order.cc: the order waits of a worker's Rerouter: whether a
// Produce request on a rerouting topic must be kept back by its session
// before it goes (behind earlier writes of its producer and partition), the
// bookkeeping of such requests in the order guard (parked: bounded by
// reroute.max_in_flight), and the early re-offer of the sessions that keep
// one when the guard changes; and the early look at writes waiting for
// their leader when the view learned a refresh. Must never send or hold anything itself: the
// session keeps the request and offers it again.
#include <algorithm>

#include "proxy/reroute/rerouter.h"

namespace epochgate::proxy {

namespace {

// The wait of stream `s` of `plan` for request `t`.
policy::OrderWait stream_wait(const policy::RerouteOrderGuard& guard, const ReroutePlan& plan,
                              const RerouteStream& s, policy::Ticket t, bool reroutes) {
  if (s.target < 0) return guard.must_wait(t, s.key, s.node);
  const RerouteTargetPart& tp = plan.targets[static_cast<size_t>(s.target)];
  // A target that falls back anyway (identity, unreadable batch) never waits.
  if (!reroutes || tp.batch_error != nullptr) return policy::OrderWait::kNone;
  return guard.reroute_must_wait(t, s.key, tp.leader);
}

}  // namespace

policy::OrderWait Rerouter::order_wait(const ReroutePlan& plan, policy::Ticket t,
                                       bool reroutes) const {
  policy::OrderWait w = policy::OrderWait::kNone;
  for (const RerouteStream& s : plan.streams) w = std::max(w, stream_wait(guard_, plan, s, t, reroutes));
  return w;
}

bool Rerouter::park(const ReroutePlan& plan, policy::Ticket t, bool reroutes,
                    std::vector<policy::StreamKey>& parked) {
  guard_.set_max_in_flight(ctx_.config->reroute.max_in_flight);
  bool room = true;
  for (const RerouteStream& s : plan.streams) {
    if (stream_wait(guard_, plan, s, t, reroutes) == policy::OrderWait::kNone) continue;
    if (std::find(parked.begin(), parked.end(), s.key) != parked.end()) continue;
    if (guard_.park(t, s.key) == policy::RerouteRefusal::kNone) parked.push_back(s.key);
    else if (s.target >= 0) room = false;
  }
  report();
  return room;
}

void Rerouter::unpark(policy::Ticket t, std::vector<policy::StreamKey>& parked) {
  if (parked.empty()) return;
  for (const policy::StreamKey& k : parked) guard_.unpark(t, k);
  parked.clear();
  report();
  // Later writes may have waited behind these.
  wake_order_waiters();
}

void Rerouter::view_changed() {
  if (closed_ || (waiting_.empty() && rehops_.empty() && gaps_.empty())) return;
  for (auto& w : rehops_)
    if (std::shared_ptr<RerouteState> st = w.lock()) st->rehop_refreshed = true;
  check_waiting();
}

void Rerouter::wait_for_order(const std::shared_ptr<RerouteSink>& sink) {
  for (const auto& w : order_waiters_)
    if (w.lock() == sink) return;
  order_waiters_.push_back(sink);
}

void Rerouter::wake_order_waiters() {
  if (order_waiters_.empty()) return;
  std::vector<std::weak_ptr<RerouteSink>> waiters;
  waiters.swap(order_waiters_);
  for (auto& w : waiters) {
    std::shared_ptr<RerouteSink> sink = w.lock();
    if (sink && sink->alive && sink->reoffer) sink->reoffer();
  }
}

}  // namespace epochgate::proxy
