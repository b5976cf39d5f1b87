// proxy/session/flow_control.cc
#include "proxy/session/flow_control.h"

#include "metrics/proxy_metrics.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"

namespace epochgate::proxy {

using metrics::Direction;

FlowControl::FlowControl(WorkerContext& ctx, Connection& client, PartialFrameClock& partial,
                         int32_t node_id)
    : ctx_(ctx), client_(client), partial_(partial), node_id_(node_id) {}

bool FlowControl::update_client(bool draining, size_t in_flight, bool mid_request,
                                bool splicing) {
  const auto& lim = ctx_.config->limits;
  const bool over_budget = client_.over_budget();
  const bool may_read = !upstream_->above_high_watermark() &&
                        (mid_request || (!draining && in_flight < lim.max_in_flight_per_connection));
  const bool pace = splicing && may_read && upstream_->queued_bytes() > 0;
  if (pace) upstream_->notify_when_written();  // on_drained() then resumes the read
  const bool should_read = may_read && !over_budget && !pace;
  // The broker's wait, not the client's: its output is full or the records
  // wait for it. Over the budget the clock runs (PartialFrameClock).
  const bool held_for_upstream =
      !should_read && !over_budget && (pace || upstream_->above_high_watermark());
  if (held_for_upstream != partial_.held())
    held_for_upstream ? partial_.hold(now_ns()) : partial_.release(now_ns());
  // Paused by the budget alone, whether reading now or not (a session
  // opened during a pause holds its first request unread): registered, so
  // the worker's re-check resumes it when the budget frees.
  if (over_budget && !budget_paused_ && (client_.reading() || may_read)) {
    pause_for_budget();
  } else if (!over_budget) {
    budget_paused_ = false;
  }
  // After the client's end of stream nothing more can be read: the session
  // offers what its input holds itself (Session::on_client_eof()).
  if (should_read && !client_.reading() && !client_.read_eof()) {
    client_.start_reading();
    client_paused_ = false;
    // Whole frames may still wait in the buffer from before the pause.
    return !client_.input().empty();
  }
  if (!should_read && client_.reading()) {
    client_.stop_reading();
    if (pace && !over_budget) return false;
    if (in_flight >= lim.max_in_flight_per_connection)
      EPOCHGATE_PROXY_LOG(info, "max_in_flight",
                          "client {} node {}: {} requests in flight "
                          "(limits.max_in_flight_per_connection); reading more once responses "
                          "arrive",
                          client_.peer(), node_id_, in_flight);
    if (!client_paused_ && ctx_.metrics && !draining)
      ctx_.metrics->backpressure_pause(Direction::kClientToUpstream);
    client_paused_ = true;
  }
  return false;
}

void FlowControl::update_upstream(bool streaming) {
  bool above = client_.above_high_watermark();
  bool pace = streaming && !above && client_.queued_bytes() > 0;
  if (pace) client_.notify_when_written();  // on_drained() then resumes the read
  bool should_read = !above && !pace;
  if (should_read && !upstream_->reading()) {
    upstream_->start_reading();
    upstream_paused_ = false;
  } else if (!should_read && upstream_->reading()) {
    upstream_->stop_reading();
    if (!pace) {
      if (!upstream_paused_ && ctx_.metrics)
        ctx_.metrics->backpressure_pause(Direction::kUpstreamToClient);
      upstream_paused_ = true;
    }
  }
}

void FlowControl::pause_for_budget() {
  if (ctx_.budget_recheck) ctx_.budget_recheck();
  if (budget_paused_) return;
  budget_paused_ = true;
  if (ctx_.metrics) ctx_.metrics->buffer_budget_pause();
  EPOCHGATE_PROXY_LOG(warn, "buffer_budget",
                      "client {} node {}: connection buffers hold {} bytes, over "
                      "limits.buffer_budget_bytes {}; client reads pause until they drain",
                      client_.peer(), node_id_, ctx_.budget ? ctx_.budget->used() : 0,
                      ctx_.budget ? ctx_.budget->limit() : ctx_.config->limits.buffer_budget_bytes);
}

void FlowControl::on_no_buffers(bool client_side) {
  pause_for_budget();
  if (client_side) client_paused_ = true;
}

}  // namespace epochgate::proxy
