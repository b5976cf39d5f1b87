// proxy/core/in_flight_queue.cc
#include "proxy/core/in_flight_queue.h"

namespace epochgate::proxy {

InFlightRequest& InFlightQueue::push(int32_t correlation_id, int16_t api_key, int16_t api_version,
                                     uint64_t now_ns) {
  InFlightRequest& r = client_.emplace_back();
  r.correlation_id = correlation_id;
  r.api_key = api_key;
  r.api_version = api_version;
  r.upstream_version = api_version;
  r.received_ns = now_ns;
  return r;
}

uint16_t InFlightQueue::add_upstream() {
  upstreams_.emplace_back();
  return static_cast<uint16_t>(upstreams_.size() - 1);
}

void InFlightQueue::mark_forwarded(InFlightRequest& r, uint64_t now_ns) {
  add_upstream_part(r, 0, r.correlation_id, now_ns);
}

int InFlightQueue::add_upstream_part(InFlightRequest& r, uint16_t upstream, int32_t correlation_id,
                                     uint64_t now_ns) {
  int part = r.add_part(RequestPart::Source::kUpstream, upstream);
  if (part < 0) return -1;
  r.awaiting_upstream = true;
  if (r.forwarded_ns == 0) r.forwarded_ns = now_ns;
  upstreams_[upstream].push(correlation_id, &r, static_cast<size_t>(part));
  return part;
}

}  // namespace epochgate::proxy
