// proxy/core/reroute_state.cc
#include "proxy/core/reroute_state.h"

#include <algorithm>

#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/api_traits.h"
#include "codec/wire_ints.h"
#include "proxy/core/in_flight_request.h"

namespace epochgate::proxy {

bool RerouteState::merge_answers(codec::ProduceResponse& m) const {
  using R = codec::PartitionShape<codec::ProduceResponse>;
  bool any = false;
  for (const auto& a : answers) any = any || a.has_value();
  if (!any) return false;
  for (size_t i = 0; i < answers.size(); ++i) {
    if (!answers[i]) continue;
    const RerouteTargetPart& t = plan->targets[i];
    for (auto& topic : R::topics(m)) {
      if (R::name(topic) != t.topic || R::id(topic) != t.topic_id) continue;
      for (auto& p : R::partitions(topic))
        if (R::partition(p) == t.partition) p = *answers[i];
    }
  }
  R::set_throttle(m, std::max(R::throttle(m), throttle_time_ms));
  if (!endpoints.empty()) {
    auto& eps = R::make_node_endpoints(m);
    for (const auto& n : endpoints) {
      bool dup = false;
      for (const auto& have : eps) dup = dup || have.node_id == n.node_id;
      if (!dup) eps.push_back(n);
    }
  }
  return true;
}

namespace {

void keep_fields(codec::TaggedFields& fields, std::deque<std::string>& store) {
  for (codec::TaggedField& f : fields) {
    if (f.data.is_null || f.data.size == 0) continue;
    const std::string& copy = store.emplace_back(f.data.view());
    f.data.data = reinterpret_cast<const uint8_t*>(copy.data());
  }
}

}  // namespace

void RerouteState::keep_bytes(PartitionAnswer& p) {
  keep_fields(p.unknown_tagged_fields, kept_bytes);
  for (auto& e : p.record_errors) keep_fields(e.unknown_tagged_fields, kept_bytes);
  if (p.current_leader) keep_fields(p.current_leader->unknown_tagged_fields, kept_bytes);
}

void RerouteState::keep_bytes(codec::ProduceResponse::NodeEndpoint& n) {
  keep_fields(n.unknown_tagged_fields, kept_bytes);
}

RerouteState::~RerouteState() {
  if (owner != nullptr) owner->direct_answered(*this);
}

bool finish_rerouted(InFlightRequest& e) {
  if (e.ready || e.outstanding() > 0 || e.response.empty()) return false;
  if (RerouteState* st = e.reroute.get(); st != nullptr && st->response) {
    const bool merged = st->merge_answers(*st->response);
    if (merged || st->response_changed) {
      // Encoded once, from views into the bytes it replaces.
      std::vector<uint8_t> out;
      codec::encode_frame(out, st->response_header, *st->response, e.api_version);
      if (st->response_trailing.size > 0) {
        out.insert(out.end(), st->response_trailing.data,
                   st->response_trailing.data + st->response_trailing.size);
        write_be32(out.data(), static_cast<uint32_t>(out.size() - 4));
      }
      st->response.reset();
      st->response_trailing = codec::Bytes{};
      e.response = std::move(out);
    }
  }
  e.ready = true;
  return true;
}

}  // namespace epochgate::proxy
