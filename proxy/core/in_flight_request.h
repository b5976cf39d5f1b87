// proxy/core/in_flight_request.h: the unit of work of a session: one client
// request that owes the client one response, answered by one or more parts
// (the broker's answer to what was forwarded, an answer epochgate made
// itself, later answers from other brokers). Owns the request's bookkeeping;
// no I/O, no ordering (proxy/core/in_flight_queue.h keeps the client's order,
// proxy/core/upstream_order.h each upstream connection's).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace epochgate::proxy {

struct RerouteState;

/// Per-request state the policy attaches (a split request's local part,
/// its decision), kept until the response is assembled.
struct EntryContext {
  virtual ~EntryContext() = default;
};

/// One outstanding or answered part of a request's response.
struct RequestPart {
  enum class Source : uint8_t {
    kLocal,     ///< epochgate answered it (a local answer, a split's local half)
    kUpstream,  ///< forwarded; answered by upstream connection `upstream`
    kReroute,   ///< sent by the worker's Rerouter to a partition's leader
  };
  Source source = Source::kUpstream;
  /// Which of the session's upstream connections answers it (0: the one the
  /// session dialed; see InFlightQueue::upstream()).
  uint16_t upstream = 0;
  bool answered = false;
};

/// One request that owes the client a response, with the parts it waits for.
struct InFlightRequest {
  /// Parts one request can wait for at once (inline, no allocation per request).
  static constexpr size_t kMaxParts = 4;

  int32_t correlation_id = 0;
  int16_t api_key = 0;
  int16_t api_version = 0;        ///< version the client sent
  int16_t upstream_version = 0;   ///< version sent upstream (differs when bridged)
  bool awaiting_upstream = false; ///< an upstream part is forwarded and not yet answered
  /// `response` holds the whole frame for the client, assembled from every
  /// part; the client order releases a request only then.
  bool ready = false;
  bool raw_sasl_token = false;    ///< a SaslHandshake v0 raw token: its answer has no header
  std::vector<uint8_t> response;  ///< size-prefixed frame, when not written straight through
  uint64_t received_ns = 0;       ///< request frame complete (monotonic ns)
  uint64_t forwarded_ns = 0;      ///< queued upstream (0: answered by epochgate)
  uint64_t answered_ns = 0;       ///< last upstream part's answer read
  /// Longest the broker may take by the request's own terms (Produce
  /// timeout_ms, Fetch max_wait_ms; 0 for most APIs); -1: not watched.
  int32_t own_wait_ms = 0;
  bool overdue_reported = false;  ///< counted and logged as overdue once
  /// What assembles the parts into one response (the policy's split state).
  std::unique_ptr<EntryContext> context;
  /// Partitions of a Produce epochgate sends to their leader itself
  /// (proxy/core/reroute_state.h); their answers replace its local
  /// NOT_LEADER_OR_FOLLOWER ones before the response is ready.
  std::shared_ptr<RerouteState> reroute;

  /// Adds a part; returns its index, or -1 past kMaxParts.
  int add_part(RequestPart::Source source, uint16_t upstream = 0) {
    if (part_count_ == kMaxParts) return -1;
    parts_[part_count_] = RequestPart{source, upstream, source == RequestPart::Source::kLocal};
    return static_cast<int>(part_count_++);
  }
  /// Marks part `index` answered.
  void answer_part(size_t index) {
    if (index < part_count_) parts_[index].answered = true;
  }
  size_t part_count() const { return part_count_; }
  const RequestPart& part(size_t index) const { return parts_[index]; }
  /// Parts not answered yet; the response can be assembled at 0.
  size_t outstanding() const {
    size_t n = 0;
    for (size_t i = 0; i < part_count_; ++i) n += parts_[i].answered ? 0 : 1;
    return n;
  }

 private:
  std::array<RequestPart, kMaxParts> parts_{};
  uint8_t part_count_ = 0;
};

/// The name the policy seam (proxy/core/fencing_hooks.h) still uses.
using InFlightEntry = InFlightRequest;

}  // namespace epochgate::proxy
