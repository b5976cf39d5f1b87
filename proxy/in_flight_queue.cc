// proxy/in_flight_queue.cc
#include "proxy/in_flight_queue.h"

namespace epochgate::proxy {

InFlightEntry& InFlightQueue::push(int32_t correlation_id, int16_t api_key, int16_t api_version,
                                   uint64_t now_ns) {
  InFlightEntry& e = client_.emplace_back();
  e.correlation_id = correlation_id;
  e.api_key = api_key;
  e.api_version = api_version;
  e.upstream_version = api_version;
  e.received_ns = now_ns;
  return e;
}

void InFlightQueue::mark_forwarded(InFlightEntry& e, uint64_t now_ns) {
  e.awaiting_upstream = true;
  e.forwarded_ns = now_ns;
  upstream_.push_back(UpstreamSlot{e.correlation_id, &e});
}

void InFlightQueue::forwarded_without_response(int32_t correlation_id) {
  upstream_.push_back(UpstreamSlot{correlation_id, nullptr});
  if (++no_response_slots_ <= kMaxNoResponseSlots) return;
  // Forget the oldest acks=0 request; if a broker ever answers it, the answer
  // is dropped as unknown, which is what the client needs anyway.
  for (auto it = upstream_.begin(); it != upstream_.end(); ++it) {
    if (it->entry == nullptr) {
      upstream_.erase(it);
      --no_response_slots_;
      break;
    }
  }
}

InFlightEntry* InFlightQueue::oldest_awaiting_upstream() {
  for (const UpstreamSlot& s : upstream_)
    if (s.entry != nullptr) return s.entry;
  return nullptr;
}

MatchResult InFlightQueue::match_upstream(int32_t correlation_id, InFlightEntry** out) {
  *out = nullptr;
  size_t i = 0;
  for (; i < upstream_.size(); ++i) {
    if (upstream_[i].correlation_id == correlation_id) break;
    if (upstream_[i].entry != nullptr) {
      // The broker skipped a request that owes a response.
      return MatchResult::kOutOfOrder;
    }
  }
  if (i == upstream_.size()) return MatchResult::kUnknown;
  // Requests before it expected no response and will never get one.
  for (size_t k = 0; k < i; ++k) {
    upstream_.pop_front();
    --no_response_slots_;
  }
  UpstreamSlot slot = upstream_.front();
  upstream_.pop_front();
  if (slot.entry == nullptr) {
    --no_response_slots_;
    return MatchResult::kNoResponseDue;
  }
  slot.entry->awaiting_upstream = false;
  *out = slot.entry;
  return MatchResult::kMatched;
}

InFlightEntry* InFlightQueue::match_next_owed() {
  while (!upstream_.empty() && upstream_.front().entry == nullptr) {
    upstream_.pop_front();
    --no_response_slots_;
  }
  if (upstream_.empty()) return nullptr;
  InFlightEntry* e = upstream_.front().entry;
  upstream_.pop_front();
  e->awaiting_upstream = false;
  return e;
}

}  // namespace epochgate::proxy
