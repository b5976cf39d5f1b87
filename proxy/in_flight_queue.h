// proxy/in_flight_queue.h: the per-connection record of requests waiting for
// responses. Keeps two orders: the client's (responses must reach the client
// in request order, including answers epochgate makes itself) and the
// upstream's (a broker answers in the order it was sent requests). No I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace epochgate::proxy {

/// Per-request state a session attaches to an entry (policy split state, etc.).
struct EntryContext {
  virtual ~EntryContext() = default;
};

/// One request that owes the client a response.
struct InFlightEntry {
  int32_t correlation_id = 0;
  int16_t api_key = 0;
  int16_t api_version = 0;        ///< version the client sent
  int16_t upstream_version = 0;   ///< version sent upstream (differs when bridged)
  bool awaiting_upstream = false; ///< forwarded, response not yet read
  bool ready = false;             ///< `response` holds the whole frame for the client
  bool raw_sasl_token = false;    ///< a SaslHandshake v0 raw token: its answer has no header
  std::vector<uint8_t> response;  ///< size-prefixed frame, when not written straight through
  uint64_t received_ns = 0;       ///< request frame complete (monotonic ns)
  uint64_t forwarded_ns = 0;      ///< queued upstream (0: answered by epochgate)
  uint64_t answered_ns = 0;       ///< broker response read
  /// Longest the broker may take by the request's own terms (Produce
  /// timeout_ms, Fetch max_wait_ms; 0 for most APIs); -1: not watched.
  int32_t own_wait_ms = 0;
  bool overdue_reported = false;  ///< counted and logged as overdue once
  std::unique_ptr<EntryContext> context;
};

/// Result of matching an upstream response's correlation id.
enum class MatchResult {
  kMatched,        ///< `entry` is the request this response answers
  kNoResponseDue,  ///< answers a request that expects none (acks=0): drop it
  kUnknown,        ///< no request with this id is pending: drop it
  kOutOfOrder,     ///< an earlier request still waits: protocol violation
};

/// In-flight bookkeeping of one client connection.
class InFlightQueue {
 public:
  /// Cap on remembered acks=0 requests (a real broker never answers them).
  static constexpr size_t kMaxNoResponseSlots = 4096;

  /// Appends a request that expects a response; returns it for filling in.
  InFlightEntry& push(int32_t correlation_id, int16_t api_key, int16_t api_version,
                      uint64_t now_ns);
  /// Marks `e` as forwarded upstream (its response will come from the broker).
  void mark_forwarded(InFlightEntry& e, uint64_t now_ns);
  /// Records a forwarded request that expects no response (Produce acks=0).
  void forwarded_without_response(int32_t correlation_id);

  /// Matches a broker response by correlation id; on kMatched `*out` is set.
  MatchResult match_upstream(int32_t correlation_id, InFlightEntry** out);
  /// Takes the oldest forwarded request that owes a response, whatever the
  /// response says (a raw SASL token answer carries no correlation id);
  /// nullptr when none is pending.
  InFlightEntry* match_next_owed();

  /// True when `e` is the oldest request owed to the client.
  bool is_front(const InFlightEntry& e) const { return !client_.empty() && &client_.front() == &e; }
  InFlightEntry* front() { return client_.empty() ? nullptr : &client_.front(); }
  /// Drops the oldest entry (after its response was written).
  void pop_front() { client_.pop_front(); }

  /// The oldest forwarded request that owes a response and is not yet
  /// answered (the one the broker must answer next), or nullptr.
  InFlightEntry* oldest_awaiting_upstream();

  /// Requests owed to the client.
  size_t size() const { return client_.size(); }
  /// Requests forwarded and not yet answered by the broker (with or without response due).
  size_t upstream_pending() const { return upstream_.size(); }
  bool empty() const { return client_.empty(); }

 private:
  struct UpstreamSlot {
    int32_t correlation_id;
    InFlightEntry* entry;  // nullptr: no response due
  };
  std::deque<InFlightEntry> client_;
  std::deque<UpstreamSlot> upstream_;
  size_t no_response_slots_ = 0;
};

}  // namespace epochgate::proxy
