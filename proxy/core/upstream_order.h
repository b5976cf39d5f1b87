// proxy/core/upstream_order.h: the order in which one upstream connection owes
// answers: a broker answers a connection's requests in the order it was sent
// them (Kafka protocol guarantee), so each forwarded request part (or acks=0
// request, which owes nothing) takes a slot, and an answer's correlation id
// must match the oldest slot that owes one. One per upstream connection; no
// I/O, never decides the client's order (proxy/core/in_flight_queue.h does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include "proxy/core/in_flight_request.h"

namespace epochgate::proxy {

/// Result of matching an upstream response's correlation id.
enum class MatchResult {
  kMatched,        ///< the answer belongs to the slot's request part
  kNoResponseDue,  ///< answers a request that expects none (acks=0): drop it
  kUnknown,        ///< no request with this id is pending: drop it
  kOutOfOrder,     ///< an earlier request still waits: protocol violation
};

/// What one upstream connection was sent and still owes.
class UpstreamOrder {
 public:
  /// Cap on remembered acks=0 requests (a real broker never answers them).
  static constexpr size_t kMaxNoResponseSlots = 4096;

  /// Part `part` of `r` was sent on this connection under `correlation_id`.
  void push(int32_t correlation_id, InFlightRequest* r, size_t part);
  /// A request that expects no response (Produce acks=0) was sent.
  void push_no_response(int32_t correlation_id);

  /// Matches an answer by correlation id; on kMatched sets `*r` and `*part`
  /// and marks that part answered.
  MatchResult match(int32_t correlation_id, InFlightRequest** r, size_t* part);
  /// Takes the oldest slot that owes an answer, whatever the answer says (a
  /// raw SASL token's answer has no correlation id); nullptr when none.
  InFlightRequest* match_next_owed();
  /// The request match() would give `correlation_id` (kMatched), not taken
  /// and nothing marked answered; nullptr for any other outcome.
  InFlightRequest* peek(int32_t correlation_id) const;
  /// The oldest slot's request that owes an answer, not taken; or nullptr.
  InFlightRequest* oldest_owed() const;
  /// Slots sent and not yet answered (with or without a response due).
  size_t pending() const { return slots_.size(); }

 private:
  struct Slot {
    int32_t correlation_id;
    InFlightRequest* request;  // nullptr: no response due
    size_t part;
  };
  void answered(const Slot& s);
  std::deque<Slot> slots_;
  size_t no_response_slots_ = 0;
};

}  // namespace epochgate::proxy
