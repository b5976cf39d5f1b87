// proxy/session/response_path.cc
#include "proxy/session/response_path.h"

#include <spdlog/spdlog.h>

#include <string>

#include "codec/api_table.h"
#include "codec/wire_ints.h"
#include "metrics/proxy_metrics.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"
#include "proxy/reroute/rerouter.h"
#include "proxy/session/api_versions_filter.h"

namespace epochgate::proxy {

namespace {

// An unsigned varint (KIP-482 compact lengths); false when truncated.
bool read_uvarint(const uint8_t*& p, const uint8_t* end, uint64_t& out) {
  out = 0;
  for (int shift = 0; shift < 35 && p < end; shift += 7) {
    const uint8_t b = *p++;
    out |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// SaslAuthenticateResponse after its ErrorCode: ErrorMessage (nullable
// string), then AuthBytes; v2 on is flexible (compact lengths, KIP-482).
// True when AuthBytes is empty; false when it is not or cannot be read.
bool authenticate_token_empty(const uint8_t* p, size_t n, bool flexible) {
  const uint8_t* end = p + n;
  if (flexible) {
    uint64_t len = 0;
    if (!read_uvarint(p, end, len)) return false;
    if (len > 0) {
      if (static_cast<uint64_t>(end - p) < len - 1) return false;
      p += len - 1;
    }
    return read_uvarint(p, end, len) && len <= 1;
  }
  if (end - p < 2) return false;
  const int16_t msg = static_cast<int16_t>((p[0] << 8) | p[1]);
  p += 2;
  if (msg > 0) {
    if (end - p < msg) return false;
    p += msg;
  }
  if (end - p < 4) return false;
  const int32_t bytes = static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                                             (uint32_t{p[2]} << 8) | p[3]);
  return bytes <= 0;
}


}  // namespace

ResponsePath::ResponsePath(WorkerContext& ctx, int32_t node_id, Connection& client,
                           InFlightQueue& in_flight, SaslFraming& sasl, BrokerBridging& bridging,
                           const std::string& upstream_name, SessionHost& host)
    : ctx_(ctx),
      node_id_(node_id),
      client_(client),
      in_flight_(in_flight),
      sasl_(sasl),
      bridging_(bridging),
      upstream_name_(upstream_name),
      host_(host),
      stream_(ctx, node_id, client, in_flight, upstream_name, host) {
  // A reroute answered after the broker's part: its session writes what is
  // ready then (never into a closing client connection).
  in_flight_.reroute_sink()->flush = [this] {
    if (client_.closing()) return;
    flush_ready();
    client_.flush();
    host_.responses_flushed();
  };
}

bool ResponsePath::deliver_raw_sasl_token(const uint8_t* frame, size_t size) {
  InFlightRequest* e = in_flight_.match_next_owed();
  if (e == nullptr || !e->raw_sasl_token) {
    host_.frame_error(CloseReason::kUnexpectedSaslToken,
                "upstream " + upstream_name_ + " answered a SASL token out of turn");
    return false;
  }
  e->answered_ns = now_ns();
  deliver(*e, frame - 4, size + 4);
  sasl_.on_broker_token(size);
  host_.sasl_answered();
  return true;
}

bool ResponsePath::handle(const uint8_t* frame, size_t size) {
  stream_.whole_response_read();
  if (sasl_.broker_sends_raw_token()) return deliver_raw_sasl_token(frame, size);
  if (size < 4) {
    host_.frame_error(CloseReason::kTruncated, "response shorter than a correlation id from " + upstream_name_);
    return false;
  }
  int32_t corr = read_be32(frame);
  InFlightRequest* e = nullptr;
  switch (in_flight_.match_upstream(corr, &e)) {
    case MatchResult::kMatched:
      break;
    case MatchResult::kNoResponseDue:
      // The librdkafka mock cluster answers acks=0 Produce; a client must
      // never see that (Java treats an unexpected correlation id as fatal).
      if (ctx_.metrics) ctx_.metrics->unexpected_response();
      return true;
    case MatchResult::kUnknown:
      if (ctx_.metrics) ctx_.metrics->unexpected_response();
      spdlog::debug("upstream {}: dropped response with unknown correlation id {}",
                    upstream_name_, corr);
      return true;
    case MatchResult::kOutOfOrder:
      host_.frame_error(CloseReason::kUnexpectedCorrelationId,
                  "upstream " + upstream_name_ + " answered " + std::to_string(corr) +
                      " before an earlier request");
      return false;
  }
  uint64_t now = now_ns();
  e->answered_ns = now;
  if (e->api_key == codec::kSaslHandshake) {
    // Response header v0 (correlation id), then ErrorCode.
    int16_t error_code = size >= 6 ? static_cast<int16_t>((frame[4] << 8) | frame[5]) : -1;
    host_.count_client_login(sasl_.on_handshake_response(error_code));
    host_.sasl_answered();
  } else if (e->api_key == codec::kSaslAuthenticate) {
    codec::ResponseHeader h;
    if (codec::parse_response_header(frame, size,
                                     codec::response_header_version(e->api_key, e->upstream_version),
                                     h).ok() &&
        size >= h.size + 2)
      host_.count_client_login(sasl_.on_authenticate_response(
          static_cast<int16_t>((frame[h.size] << 8) | frame[h.size + 1]),
          authenticate_token_empty(frame + h.size + 2, size - h.size - 2,
                                   e->upstream_version >= 2)));
  }
  if (ctx_.metrics) {
    ctx_.metrics->response(e->api_key);
    ctx_.metrics->upstream_latency(e->api_key, static_cast<double>(now - e->forwarded_ns) / 1e9);
  }
  // Responses the API table marks decoded (addresses, ApiVersions capping,
  // what the policy learns from); everything else passes as its bytes.
  const codec::ApiInfo* info = codec::api_info(e->api_key);
  if ((info != nullptr && info->response_decoded(e->api_version, ctx_.fencing != nullptr)) ||
      e->context) {
    std::vector<uint8_t> rewritten;
    BrokerTail tail;
    Made made = Made::kUnchanged;
    if (!transform_response(*e, frame, size, rewritten, tail, made)) return false;
    if (made == Made::kKept) {
      deliver_rerouted(*e);
      return true;
    }
    if (made == Made::kChanged) {
      deliver(*e, rewritten.data(), rewritten.size(), tail);
      return true;
    }
  }
  deliver(*e, frame - 4, size + 4);
  return true;
}

void ResponsePath::deliver(InFlightRequest& e, const uint8_t* frame_with_prefix, size_t len,
                           BrokerTail tail) {
  auto keep = [&] {
    e.response.reserve(len + tail.len);
    e.response.assign(frame_with_prefix, frame_with_prefix + len);
    e.response.insert(e.response.end(), tail.data, tail.data + tail.len);
  };
  if (e.reroute) {
    // Not decoded by the pipeline (it keeps every Produce with reroutes):
    // kept as bytes, so nothing is rerouted at moment 2.
    keep();
    deliver_rerouted(e);
    return;
  }
  if (in_flight_.is_front(e)) {
    client_.write_through(frame_with_prefix, len);
    if (tail.len > 0) client_.write_through(tail.data, tail.len);
    record_proxy_latency(ctx_, e);
    in_flight_.pop_front();
    return;
  }
  keep();
  e.ready = true;
}

void ResponsePath::deliver_rerouted(InFlightRequest& e) {
  // The leaders' answers replace epochgate's own for the rerouted
  // partitions; until every part is in, the response waits in its slot.
  // after_broker_answer also ends the guard's record of the writes the
  // broker answered (except those still waiting to be rerouted).
  if (ctx_.rerouter) ctx_.rerouter->after_broker_answer(e);
  if (finish_rerouted(e)) flush_ready();
}

void ResponsePath::flush_ready() {
  while (InFlightRequest* f = in_flight_.front()) {
    if (!f->ready) break;
    client_.queue(f->response.data(), f->response.size());
    record_proxy_latency(ctx_, *f);
    in_flight_.pop_front();
  }
}

}  // namespace epochgate::proxy
