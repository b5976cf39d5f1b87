// proxy/session/flow_control.h: a session's flow control: which side reads, by the
// watermarks of the other side's output (proxy/net/connection.h), the cap on
// requests in flight and the process-wide buffer budget. Owns the pause
// state, its metrics and log lines; never reads, writes or parses bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "proxy/core/worker_context.h"
#include "proxy/net/connection.h"
#include "proxy/session/partial_frame_clock.h"

namespace epochgate::proxy {

/// Starts and stops reading on a session's two connections. All calls on
/// the loop thread; the session calls update_*() after anything that moved
/// bytes, and on_no_buffers() when a read found no room (UV_ENOBUFS).
class FlowControl {
 public:
  /// `partial`: the client's frame clock, held while the client's reads
  /// wait for the broker (the upstream's output, not the budget).
  FlowControl(WorkerContext& ctx, Connection& client, PartialFrameClock& partial,
              int32_t node_id);

  /// The upstream connection once it is open (before that only the client
  /// side exists and update_*() are not called).
  void attach_upstream(Connection& upstream) { upstream_ = &upstream; }

  /// The client reads while it may send more: not draining, the upstream's
  /// output at or under its high watermark, fewer than
  /// limits.max_in_flight_per_connection requests in flight (`in_flight`),
  /// the buffer budget not exceeded. While a request's head went upstream
  /// and its rest is still being read (`mid_request`: a streamed Produce),
  /// neither draining nor the in-flight cap stops the read: the broker
  /// answers nothing before the request's last byte. While its records are
  /// to be spliced (`splicing`), it also waits whenever the upstream's
  /// output holds bytes (what the broker's socket did not take): a read
  /// then would copy record bytes a splice moves once the queue is written;
  /// they wait in the kernel's socket buffer instead (not a backpressure
  /// pause). Either way the client's partial-frame clock stops while its
  /// reads wait for the broker alone. Returns true when reading resumed
  /// with whole frames possibly waiting in the input (the caller processes
  /// them).
  bool update_client(bool draining, size_t in_flight, bool mid_request = false,
                     bool splicing = false);
  /// The upstream reads while the client's output is at or under its high
  /// watermark: responses are what frees memory, so the budget never stops them.
  /// While a response streams (`streaming`), it also waits whenever the
  /// client's output queue holds bytes: what the client's socket did not
  /// take at once was copied there, and reading on would copy nearly every
  /// byte of the response once more; the rest waits in the kernel's socket
  /// buffer instead, as with a relay's fixed buffer (not a backpressure pause).
  void update_upstream(bool streaming = false);
  /// Marks the client paused on the buffer budget (counted and logged once
  /// per pause, rate-limited) and asks the worker to re-check soon.
  void pause_for_budget();
  /// A read found no room (over the budget with a full buffer).
  void on_no_buffers(bool client_side);

  bool budget_paused() const { return budget_paused_; }

 private:
  WorkerContext& ctx_;
  Connection& client_;
  PartialFrameClock& partial_;
  Connection* upstream_ = nullptr;
  int32_t node_id_;
  bool client_paused_ = false;
  bool upstream_paused_ = false;
  bool budget_paused_ = false;
};

}  // namespace epochgate::proxy
