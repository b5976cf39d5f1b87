// proxy/core/reroute_state.cc
#include "proxy/core/reroute_state.h"

#include <algorithm>

#include "codec/header.h"
#include "codec/message_io.h"
#include "proxy/core/in_flight_request.h"

namespace epochgate::proxy {

bool RerouteState::apply(std::vector<uint8_t>& frame, int16_t version) const {
  bool any = false;
  for (const auto& a : answers) any = any || a.has_value();
  if (!any || frame.size() < 8) return false;
  const uint8_t* body = frame.data() + 4;
  size_t size = frame.size() - 4;
  codec::ResponseHeader h;
  if (!codec::parse_response_header(body, size, codec::response_header_version(0, version), h).ok())
    return false;
  h.header_version = codec::response_header_version(0, version);
  codec::ProduceResponse m;
  codec::Bytes trailing;
  if (!codec::decode_body_allow_trailing(body + h.size, size - h.size, version, m, trailing).ok())
    return false;
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i]) continue;
    const RerouteTargetPart& t = plan->targets[i];
    for (auto& topic : m.responses) {
      if (topic.name != t.topic || topic.topic_id != t.topic_id) continue;
      for (auto& p : topic.partition_responses)
        if (p.index == t.partition) p = *answers[i];
    }
  }
  m.throttle_time_ms = std::max(m.throttle_time_ms, throttle_time_ms);
  if (!endpoints.empty()) {
    auto& eps = m.node_endpoints ? *m.node_endpoints : m.node_endpoints.emplace();
    for (const auto& n : endpoints) {
      bool dup = false;
      for (const auto& have : eps) dup = dup || have.node_id == n.node_id;
      if (!dup) eps.push_back(n);
    }
  }
  std::vector<uint8_t> out;
  codec::encode_frame(out, h, m, version);
  frame = std::move(out);
  return true;
}

RerouteState::~RerouteState() {
  if (owner != nullptr) owner->direct_answered(*this);
}

bool finish_rerouted(InFlightRequest& e) {
  if (e.ready || e.outstanding() > 0 || e.response.empty()) return false;
  if (e.reroute) e.reroute->apply(e.response, e.api_version);
  e.ready = true;
  return true;
}

}  // namespace epochgate::proxy
