// policy/reroute_order_guard.cc: the per-stream bookkeeping behind
// RerouteOrderGuard (see reroute_order_guard.h).
#include "policy/reroute_order_guard.h"

#include <algorithm>

namespace epochgate::policy {

size_t StreamKeyHash::operator()(const StreamKey& k) const {
  size_t h = std::hash<std::string>()(k.topic);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(std::hash<int32_t>()(k.partition));
  mix(std::hash<int64_t>()(k.producer_id));
  if (k.producer_id < 0) mix(std::hash<std::string>()(k.client));
  return h;
}

const char* reroute_refusal_name(RerouteRefusal r) {
  switch (r) {
    case RerouteRefusal::kNone: return "none";
    case RerouteRefusal::kEarlierInFlight: return "earlier_in_flight";
    case RerouteRefusal::kLaterInFlight: return "later_in_flight";
    case RerouteRefusal::kEarlierHeld: return "earlier_held";
    case RerouteRefusal::kStreamFellBack: return "stream_fell_back";
    case RerouteRefusal::kMaxInFlight: return "max_in_flight";
    case RerouteRefusal::kHoldFull: return "hold_full";
  }
  return "unknown";
}

void RerouteOrderGuard::insert(Stream& st, Entry e) {
  // Tickets mostly arrive in order; a reroute decided on a broker's answer
  // carries an older ticket than writes sent since.
  auto it = std::upper_bound(st.entries.begin(), st.entries.end(), e.ticket,
                             [](Ticket t, const Entry& x) { return t < x.ticket; });
  st.entries.insert(it, e);
}

bool RerouteOrderGuard::erase(Stream& st, Ticket t, Kind kind) {
  for (auto it = st.entries.begin(); it != st.entries.end(); ++it) {
    if (it->ticket == t && it->kind == kind) {
      st.entries.erase(it);
      return true;
    }
  }
  return false;
}

void RerouteOrderGuard::forget_if_idle(const StreamKey& key) {
  auto it = streams_.find(key);
  if (it != streams_.end() && it->second.entries.empty() &&
      it->second.fell_back_to == kNoFallBack) {
    streams_.erase(it);
  }
}

RerouteRefusal RerouteOrderGuard::may_reroute(Ticket t, const StreamKey& stream,
                                              int32_t from_node) const {
  auto it = streams_.find(stream);
  if (it != streams_.end()) {
    const Stream& st = it->second;
    if (st.fell_back_to != kNoFallBack) return RerouteRefusal::kStreamFellBack;
    for (const Entry& e : st.entries) {
      if (e.kind == Kind::kDirect) {
        if (e.ticket < t) return RerouteRefusal::kEarlierInFlight;
        if (from_node < 0 || e.node != from_node) return RerouteRefusal::kLaterInFlight;
      }
      if (e.kind == Kind::kParked && e.ticket < t)
        return RerouteRefusal::kEarlierHeld;
    }
    for (const auto& [node, newest] : st.newest_direct)
      if (newest > t && (from_node < 0 || node != from_node)) return RerouteRefusal::kLaterInFlight;
  }
  if (bounded_ >= max_in_flight_ || saturated_) return RerouteRefusal::kMaxInFlight;
  return RerouteRefusal::kNone;
}

OrderWait RerouteOrderGuard::must_wait(Ticket t, const StreamKey& stream, int32_t node) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return OrderWait::kNone;
  OrderWait w = OrderWait::kNone;
  for (const Entry& e : it->second.entries) {
    if (e.kind == Kind::kRerouted) return OrderWait::kRerouted;
    if (e.ticket >= t) continue;
    if (e.kind == Kind::kParked || (e.kind == Kind::kDirect && e.node != node))
      w = OrderWait::kClientPath;
  }
  return w;
}

OrderWait RerouteOrderGuard::reroute_must_wait(Ticket t, const StreamKey& stream,
                                               int32_t leader) const {
  auto it = streams_.find(stream);
  if (it == streams_.end() || it->second.fell_back_to != kNoFallBack) return OrderWait::kNone;
  OrderWait w = OrderWait::kNone;
  for (const Entry& e : it->second.entries) {
    if (e.kind == Kind::kRerouted) {
      if (e.node != leader) return OrderWait::kRerouted;
    } else if (e.ticket < t) {
      w = OrderWait::kClientPath;
    }
  }
  return w;
}

RerouteRefusal RerouteOrderGuard::park(Ticket t, const StreamKey& stream) {
  Stream& st = streams_[stream];
  for (const Entry& e : st.entries)
    if (e.ticket == t && e.kind == Kind::kParked) return RerouteRefusal::kNone;
  if (bounded_ >= max_in_flight_) {
    ++counters_.hold_full;
    forget_if_idle(stream);
    return RerouteRefusal::kHoldFull;
  }
  insert(st, Entry{t, Kind::kParked});
  ++bounded_;
  ++counters_.held;
  return RerouteRefusal::kNone;
}

void RerouteOrderGuard::unpark(Ticket t, const StreamKey& stream) {
  auto it = streams_.find(stream);
  if (it == streams_.end() || !erase(it->second, t, Kind::kParked)) return;
  --bounded_;
  forget_if_idle(stream);
}

RerouteRefusal RerouteOrderGuard::reroute_answered_direct(Ticket t, const StreamKey& stream,
                                                          int32_t new_leader, bool* later_pending) {
  int32_t from = -1;
  if (later_pending) *later_pending = false;
  auto it = streams_.find(stream);
  if (it != streams_.end()) {
    for (auto e = it->second.entries.begin(); e != it->second.entries.end(); ++e) {
      if (e->ticket == t && e->kind == Kind::kDirect) {
        from = e->node;
        it->second.entries.erase(e);
        break;
      }
    }
    if (later_pending && from >= 0)
      for (const Entry& e : it->second.entries)
        if (e.kind == Kind::kDirect && e.ticket > t && e.node == from) *later_pending = true;
  }
  // begin_reroute_from forgets the stream if it ends idle.
  return begin_reroute_from(t, stream, new_leader, from);
}

RerouteRefusal RerouteOrderGuard::begin_reroute(Ticket t, const StreamKey& stream,
                                                int32_t new_leader) {
  return begin_reroute_from(t, stream, new_leader, -1);
}

RerouteRefusal RerouteOrderGuard::begin_reroute_from(Ticket t, const StreamKey& stream,
                                                     int32_t new_leader, int32_t from_node) {
  const RerouteRefusal r = may_reroute(t, stream, from_node);
  if (r == RerouteRefusal::kNone) {
    insert(streams_[stream], Entry{t, Kind::kRerouted, new_leader});
    ++bounded_;
    ++counters_.rerouted;
    return r;
  }
  ++counters_.refused[static_cast<size_t>(r)];
  // The client will resend this write (and any later one) itself; until it
  // writes to the new leader, no write of the stream may overtake it.
  Stream& st = streams_[stream];
  if (st.fell_back_to == kNoFallBack) {
    if (fell_back_streams_ >= kMaxFellBackStreams) {
      // No room to remember this stream: refuse every reroute until
      // remembered streams drain (saturated_), rather than forget one.
      saturated_ = true;
    } else {
      ++fell_back_streams_;
      st.fell_back_to = new_leader;
    }
  } else {
    st.fell_back_to = new_leader;
  }
  forget_if_idle(stream);
  return r;
}

void RerouteOrderGuard::reroute_answered(Ticket t, const StreamKey& stream) {
  auto it = streams_.find(stream);
  if (it == streams_.end() || !erase(it->second, t, Kind::kRerouted)) return;
  --bounded_;
  forget_if_idle(stream);
}

bool RerouteOrderGuard::rehop(Ticket t, const StreamKey& stream, int32_t new_leader) {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return false;
  for (Entry& e : it->second.entries) {
    if (e.ticket == t && e.kind == Kind::kRerouted) {
      e.node = new_leader;
      return true;
    }
  }
  return false;
}

size_t RerouteOrderGuard::rerouted_to_after(Ticket t, const StreamKey& stream,
                                            int32_t leader) const {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return 0;
  size_t n = 0;
  for (const Entry& e : it->second.entries)
    if (e.ticket > t && e.kind == Kind::kRerouted && e.node == leader) ++n;
  return n;
}

void RerouteOrderGuard::forward(Ticket t, const StreamKey& stream, int32_t node) {
  Stream& st = streams_[stream];
  if (st.fell_back_to != kNoFallBack && st.fell_back_to == node) {
    st.fell_back_to = kNoFallBack;
    if (--fell_back_streams_ == 0) saturated_ = false;
  }
  insert(st, Entry{t, Kind::kDirect, node});
  for (auto& [n, newest] : st.newest_direct) {
    if (n != node) continue;
    newest = std::max(newest, t);
    return;
  }
  st.newest_direct.emplace_back(node, t);
}

void RerouteOrderGuard::direct_answered(Ticket t, const StreamKey& stream) {
  auto it = streams_.find(stream);
  if (it == streams_.end()) return;
  erase(it->second, t, Kind::kDirect);
  forget_if_idle(stream);
}

size_t RerouteOrderGuard::held() const {
  size_t n = 0;
  for (const auto& [key, st] : streams_) {
    n += static_cast<size_t>(std::count_if(st.entries.begin(), st.entries.end(), [](const Entry& e) {
      return e.kind == Kind::kParked;
    }));
  }
  return n;
}

}  // namespace epochgate::policy
