// proxy/session/session_overdue.cc: the Session's watch on what its broker owes
// (limits.upstream_overdue_ms): the oldest request forwarded on its own
// upstream and not yet answered, or the Fetch response streaming to the
// client whose last byte has not arrived (a broker that stalls mid-frame
// owes the rest of it) while epochgate reads it. Counts and logs once per
// request; never closes the connection (a client with deadlines of its own
// decides).
#include "codec/api_table.h"
#include "metrics/proxy_metrics.h"
#include "proxy/net/log_limited.h"
#include "proxy/session/session.h"

namespace epochgate::proxy {

void Session::check_overdue(uint64_t now) {
  uint32_t margin_ms = ctx_.config->limits.upstream_overdue_ms;
  if (margin_ms == 0 || state_ != State::kOpen) return;
  // A streamed response was matched when it began, so the upstream order no
  // longer names it; everything forwarded after it waits behind it.
  InFlightRequest* e = responses_.streamed_request();
  // Flow control stops reading a stream while the client has not taken what
  // it was sent: then the client is what waits, not the broker.
  if (e != nullptr && !upstream_->reading()) return;
  const size_t frame_bytes = e != nullptr ? responses_.stream_frame_bytes() : 0;
  if (e == nullptr) e = in_flight_.oldest_awaiting_upstream();
  if (e == nullptr || e->overdue_reported || e->own_wait_ms < 0) return;
  uint64_t waited_ms = (now - e->forwarded_ns) / 1000000;
  uint64_t allowed_ms = static_cast<uint64_t>(e->own_wait_ms) + margin_ms;
  if (waited_ms < allowed_ms) return;
  e->overdue_reported = true;
  if (ctx_.metrics) ctx_.metrics->upstream_overdue(e->api_key);
  const codec::ApiInfo* info = codec::api_info(e->api_key);
  const std::string streamed =
      frame_bytes == 0 ? std::string()
                       : fmt::format(" (its response stopped after {} of {} bytes)",
                                     frame_bytes - responses_.stream_left(), frame_bytes);
  EPOCHGATE_PROXY_LOG(warn, "upstream_overdue",
                      "client {} node {}: {} request (correlation id {}) forwarded to {} {} ms "
                      "ago is unanswered{}, {} ms past its own wait of {} ms "
                      "(limits.upstream_overdue_ms {})",
                      client_.peer(), node_id_, info ? info->name : "?", e->correlation_id,
                      upstream_name_, waited_ms, streamed, waited_ms - e->own_wait_ms,
                      e->own_wait_ms, margin_ms);
}

}  // namespace epochgate::proxy
