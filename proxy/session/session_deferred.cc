// proxy/session/session_deferred.cc: what a session does after responses left for
// the client from outside its own read paths (a reroute's answer completed
// them, in the rerouter's callback): the drain check and the resumption of
// client reads that the upstream read path does after its own responses;
// and the early re-offer of a request held for order when the rerouter's
// order guard changed.
// Must never process client frames from inside that callback.
#include "proxy/session/session.h"

namespace epochgate::proxy {

void Session::responses_flushed() {
  if (!open_for_requests()) return;
  if (finish_if_done()) return;
  // Requests read before the client's end of stream wait for no read to restart.
  if (client_eof_ && intake_ == Intake::kFlowing && input_waiting()) {
    hold_request();
    return;
  }
  // Frames buffered while paused are offered from the hold timer, not from
  // inside the rerouter's callback that got here.
  if (flow_.update_client(draining_, in_flight_.size(), request_stream_.active(),
                          request_stream_.splicing() || request_stream_.waits_for_upstream()) &&
      intake_ == Intake::kFlowing)
    hold_request();
  flow_.update_upstream(responses_.streaming());
}

void Session::reoffer_held() {
  // The hold timer runs the offer on the next loop turn: the rerouter's
  // callback that got here is never re-entered with client frames.
  if (state_ != State::kOpen || intake_ != Intake::kHeld) return;
  uv_timer_start(&hold_timer_, &Session::on_hold_timer, 0, 0);
}

}  // namespace epochgate::proxy
