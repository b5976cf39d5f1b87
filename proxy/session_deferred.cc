// proxy/session_deferred.cc: what a session does after responses left for
// the client from outside its own read paths (a reroute's answer completed
// them, in the rerouter's callback): the drain check and the resumption of
// client reads that the upstream read path does after its own responses.
// Must never process client frames from inside that callback.
#include "proxy/session.h"

namespace epochgate::proxy {

void Session::responses_flushed() {
  if (state_ != State::kOpen || close_after_write_) return;
  if (draining_ && in_flight_.empty()) {
    close("drain");
    return;
  }
  // Frames buffered while paused are offered from the hold timer, not from
  // inside the rerouter's callback that got here.
  if (flow_.update_client(draining_, in_flight_.size()) && !holding_) hold_request();
  flow_.update_upstream();
}

}  // namespace epochgate::proxy
