// proxy/core/in_flight_queue.h: a client connection's requests in the client's
// order, each an InFlightRequest (proxy/core/in_flight_request.h) with the parts
// it waits for, and the answer order of each upstream connection they were
// sent on (proxy/core/upstream_order.h). Responses reach the client in request
// order, epochgate's own answers included: only the oldest request, once
// assembled (ready), may be written. No I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include <memory>

#include "proxy/core/in_flight_request.h"
#include "proxy/core/reroute_state.h"
#include "proxy/core/upstream_order.h"

namespace epochgate::proxy {

/// In-flight bookkeeping of one client connection.
class InFlightQueue {
 public:
  /// Cap on remembered acks=0 requests per upstream connection.
  static constexpr size_t kMaxNoResponseSlots = UpstreamOrder::kMaxNoResponseSlots;

  InFlightQueue() : upstreams_(1), reroute_sink_(std::make_shared<RerouteSink>()) {}
  ~InFlightQueue() { reroute_sink_->alive = false; }
  InFlightQueue(const InFlightQueue&) = delete;
  InFlightQueue& operator=(const InFlightQueue&) = delete;

  /// How reroutes of these requests reach the session when they finish
  /// (cleared when the queue goes: proxy/core/reroute_state.h).
  const std::shared_ptr<RerouteSink>& reroute_sink() const { return reroute_sink_; }

  /// Appends a request that expects a response; returns it for filling in.
  /// Its address stays valid until pop_front() drops it.
  InFlightRequest& push(int32_t correlation_id, int16_t api_key, int16_t api_version,
                        uint64_t now_ns);
  /// Adds a part epochgate answers itself (answered at once: its answer is
  /// in the request's `response` or `context`).
  void add_local_part(InFlightRequest& r) { r.add_part(RequestPart::Source::kLocal); }
  /// Marks `r` as forwarded on the session's own upstream connection (its
  /// response will come from the broker there).
  void mark_forwarded(InFlightRequest& r, uint64_t now_ns);
  /// Extension point for a request answered by more than one upstream
  /// connection (a Produce partition rerouted to another broker): adds a part
  /// of `r` sent under `correlation_id` on upstream connection `upstream`
  /// (opened with add_upstream()) and returns its index, or -1 when `r` has
  /// kMaxParts parts already. That connection's answers are matched with
  /// upstream(upstream).match(), which marks the part answered; once
  /// r.outstanding() is 0 the caller assembles the parts' answers (kept in
  /// r.context) into r.response and sets r.ready. The client order needs
  /// nothing more: front(), is_front() and pop_front() look only at the
  /// oldest request and whether it is ready, so a part answered early on a
  /// fast connection waits behind older requests without any change here.
  int add_upstream_part(InFlightRequest& r, uint16_t upstream, int32_t correlation_id,
                        uint64_t now_ns);
  /// Records a forwarded request that expects no response (Produce acks=0).
  void forwarded_without_response(int32_t correlation_id) {
    upstreams_[0].push_no_response(correlation_id);
    sent_without_response_ = true;
  }
  /// A request expecting no response was ever forwarded: the broker may
  /// still be working on it when everything owed is answered.
  bool sent_without_response() const { return sent_without_response_; }

  /// Opens the answer order of one more upstream connection; returns its
  /// index for add_upstream_part() and upstream().
  uint16_t add_upstream();
  /// The answer order of upstream connection `index` (0: the session's own).
  UpstreamOrder& upstream(uint16_t index = 0) { return upstreams_[index]; }

  /// Matches an answer on the session's own upstream connection by
  /// correlation id; on kMatched `*out` is set.
  MatchResult match_upstream(int32_t correlation_id, InFlightRequest** out) {
    size_t part = 0;
    return upstreams_[0].match(correlation_id, out, &part);
  }
  /// The request match_upstream(correlation_id) would match, not taken.
  InFlightRequest* peek_upstream(int32_t correlation_id) const {
    return upstreams_[0].peek(correlation_id);
  }
  /// Takes the oldest forwarded request that owes a response on the
  /// session's own upstream, whatever the response says (a raw SASL token
  /// answer carries no correlation id); nullptr when none is pending.
  InFlightRequest* match_next_owed() { return upstreams_[0].match_next_owed(); }

  /// True when `r` is the oldest request owed to the client.
  bool is_front(const InFlightRequest& r) const { return !client_.empty() && &client_.front() == &r; }
  InFlightRequest* front() { return client_.empty() ? nullptr : &client_.front(); }
  /// Drops the oldest request (after its response was written).
  void pop_front() { client_.pop_front(); }

  /// The request the session's own broker must answer next, or nullptr.
  InFlightRequest* oldest_awaiting_upstream() { return upstreams_[0].oldest_owed(); }

  /// Requests owed to the client.
  size_t size() const { return client_.size(); }
  /// Requests forwarded on the session's own upstream and not yet answered
  /// (with or without response due).
  size_t upstream_pending() const { return upstreams_[0].pending(); }
  bool empty() const { return client_.empty(); }

 private:
  std::deque<InFlightRequest> client_;
  std::vector<UpstreamOrder> upstreams_;
  std::shared_ptr<RerouteSink> reroute_sink_;
  bool sent_without_response_ = false;
};

}  // namespace epochgate::proxy
