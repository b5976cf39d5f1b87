// proxy/core/upstream_order.cc
#include "proxy/core/upstream_order.h"

namespace epochgate::proxy {

void UpstreamOrder::push(int32_t correlation_id, InFlightRequest* r, size_t part) {
  slots_.push_back(Slot{correlation_id, r, part});
}

void UpstreamOrder::push_no_response(int32_t correlation_id) {
  slots_.push_back(Slot{correlation_id, nullptr, 0});
  if (++no_response_slots_ <= kMaxNoResponseSlots) return;
  // Forget the oldest acks=0 request; if a broker ever answers it, the answer
  // is dropped as unknown, which is what the client needs anyway.
  for (auto it = slots_.begin(); it != slots_.end(); ++it) {
    if (it->request == nullptr) {
      slots_.erase(it);
      --no_response_slots_;
      break;
    }
  }
}

void UpstreamOrder::answered(const Slot& s) {
  s.request->answer_part(s.part);
  // Still waiting when another upstream part of it is outstanding.
  bool waiting = false;
  for (size_t i = 0; i < s.request->part_count(); ++i) {
    const RequestPart& p = s.request->part(i);
    if (p.source == RequestPart::Source::kUpstream && !p.answered) waiting = true;
  }
  s.request->awaiting_upstream = waiting;
}

InFlightRequest* UpstreamOrder::oldest_owed() const {
  for (const Slot& s : slots_)
    if (s.request != nullptr) return s.request;
  return nullptr;
}

InFlightRequest* UpstreamOrder::peek(int32_t correlation_id) const {
  for (const Slot& s : slots_) {
    if (s.correlation_id == correlation_id) return s.request;
    if (s.request != nullptr) return nullptr;  // match() would find it out of order
  }
  return nullptr;
}

MatchResult UpstreamOrder::match(int32_t correlation_id, InFlightRequest** r, size_t* part) {
  *r = nullptr;
  size_t i = 0;
  for (; i < slots_.size(); ++i) {
    if (slots_[i].correlation_id == correlation_id) break;
    // The broker skipped a request that owes a response.
    if (slots_[i].request != nullptr) return MatchResult::kOutOfOrder;
  }
  if (i == slots_.size()) return MatchResult::kUnknown;
  // Requests before it expected no response and will never get one.
  for (size_t k = 0; k < i; ++k) {
    slots_.pop_front();
    --no_response_slots_;
  }
  Slot slot = slots_.front();
  slots_.pop_front();
  if (slot.request == nullptr) {
    --no_response_slots_;
    return MatchResult::kNoResponseDue;
  }
  answered(slot);
  *r = slot.request;
  *part = slot.part;
  return MatchResult::kMatched;
}

InFlightRequest* UpstreamOrder::match_next_owed() {
  while (!slots_.empty() && slots_.front().request == nullptr) {
    slots_.pop_front();
    --no_response_slots_;
  }
  if (slots_.empty()) return nullptr;
  Slot slot = slots_.front();
  slots_.pop_front();
  answered(slot);
  return slot.request;
}

}  // namespace epochgate::proxy
