// proxy/session/request_path.cc
#include "proxy/session/request_path.h"

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "codec/api_table.h"
#include "codec/header.h"
#include "codec/request_peek.h"
#include "codec/wire_ints.h"
#include "metrics/proxy_metrics.h"
#include "metrics/reroute_metrics.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/reroute_plan.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"
#include "proxy/net/read_pacer.h"
#include "proxy/reroute/rerouter.h"
#include "proxy/session/api_versions_filter.h"

namespace epochgate::proxy {

namespace {


// Group APIs a broker holds until the group settles (JoinGroup, SyncGroup).
constexpr int16_t kJoinGroup = 11;
constexpr int16_t kSyncGroup = 14;

}  // namespace

RequestPath::RequestPath(WorkerContext& ctx, int32_t node_id, Connection& client,
                         InFlightQueue& in_flight, SaslFraming& sasl,
                         const BrokerBridging& bridging, SessionHost& host)
    : ctx_(ctx),
      node_id_(node_id),
      client_(client),
      in_flight_(in_flight),
      sasl_(sasl),
      bridging_(bridging),
      host_(host) {
  in_flight_.reroute_sink()->reoffer = [this] { host_.reoffer_held(); };
}

namespace {

// A frame that parses as a Kafka request header of a known API and version
// (for telling the end of a raw SASL exchange of unknown length).
bool looks_like_request(const uint8_t* frame, size_t size) {
  int16_t key = 0, version = 0;
  int32_t corr = 0;
  if (!codec::peek_request_ids(frame, size, key, version, corr)) return false;
  const codec::ApiInfo* info = codec::api_info(key);
  if (info == nullptr || version < info->min_version || version > info->max_version) return false;
  codec::RequestHeader h;
  return codec::parse_request_header(frame, size, h).ok();
}

// The mechanism named by a SaslHandshake request body (a STRING), or empty.
std::string_view handshake_mechanism(const uint8_t* frame, size_t size) {
  codec::RequestHeader h;
  if (!codec::parse_request_header(frame, size, h).ok() || size - h.size < 2) return {};
  const uint8_t* body = frame + h.size;
  size_t len = (size_t{body[0]} << 8) | body[1];
  if (len > size - h.size - 2) return {};
  return std::string_view(reinterpret_cast<const char*>(body + 2), len);
}

}  // namespace

void RequestPath::refuse_client_sasl(int32_t corr, int16_t version) {
  EPOCHGATE_PROXY_LOG(warn, "client_sasl",
                      "client {} node {}: started its own SASL login, but epochgate logs in "
                      "for it (upstream_sasl.on_behalf_of_clients); configure the client "
                      "without SASL",
                      client_.peer(), node_id_);
  // SaslHandshake response v0/v1: header v0, ErrorCode ILLEGAL_SASL_STATE (34),
  // Mechanisms [] (offering none).
  std::vector<uint8_t> frame = {0, 0, 0, 10, 0, 0, 0, 0, 0, 34, 0, 0, 0, 0};
  write_be32(frame.data() + 4, static_cast<uint32_t>(corr));
  InFlightRequest& e = in_flight_.push(corr, codec::kSaslHandshake, version, now_ns());
  in_flight_.add_local_part(e);
  e.response = std::move(frame);
  e.ready = true;
}

RequestPath::Step RequestPath::forward_raw_sasl_token(uint8_t* frame, size_t size) {
  // Not a request: no header to read, nothing counted under an API label.
  upstream_->write_through(frame - 4, size + 4);
  uint64_t now = now_ns();
  InFlightRequest& e = in_flight_.push(0, codec::kSaslAuthenticate, 0, now);
  e.raw_sasl_token = true;
  in_flight_.mark_forwarded(e, now);
  sasl_.on_client_token();
  return Step::kConsumed;
}

const char* RequestPath::reroute_refusal() const {
  const config::Config& c = *ctx_.config;
  if (c.upstream_sasl.on_behalf_of_clients) return nullptr;
  // A client's own SASL login or TLS certificate is a principal epochgate's
  // connection cannot carry (SCRAM proofs never replay; the key stays with
  // the client).
  if (sasl_.client_authenticates()) return "identity";
  if (!c.tls.cert_file.empty() && c.tls.client_auth != "none") return "identity";
  return nullptr;
}

bool RequestPath::hold_for_order(ReroutePlan& plan, uint64_t now) {
  // Producers without a producer id are told apart by client host and
  // client id: one producer's connections to several brokers share its
  // streams (the acceptor puts them on one worker, under one guard).
  if (!plan.keyed) {
    std::string peer = client_.peer();
    std::string host = peer.substr(0, peer.rfind(':'));
    for (RerouteStream& s : plan.streams)
      if (s.key.producer_id < 0) s.key.client = host + "|" + s.key.client;
    plan.keyed = true;
  }
  // acks=0 is rerouted without waiting for anything (nothing of it is
  // tracked, and there is no answer to keep back).
  if (plan.acks == 0) return false;
  Rerouter& r = *ctx_.rerouter;
  const bool reroutes = reroute_refusal() == nullptr && r.enabled();
  const policy::Ticket t = order_ticket_ != 0 ? order_ticket_ : r.guard().next_ticket();
  policy::OrderWait w = r.order_wait(plan, t, reroutes);
  // A wait behind a write still on the client's path is bounded here; one
  // behind a rerouted write lasts until its answer (the reroute's timeout).
  const uint64_t max_hold_ns = uint64_t{ctx_.config->reroute.max_hold_ms} * 1000000;
  if (w == policy::OrderWait::kClientPath &&
      (max_hold_ns == 0 ||
       (order_hold_started_ns_ != 0 && now - order_hold_started_ns_ >= max_hold_ns))) {
    if (max_hold_ns != 0) plan.wait_refusal = "hold_timeout";
    w = policy::OrderWait::kNone;
  }
  if (w == policy::OrderWait::kNone) {
    end_order_hold();
    return false;
  }
  // Kept back (later frames of this connection behind it) and offered again
  // when the guard changes, or at the hold timer.
  if (order_ticket_ == 0) order_ticket_ = r.guard().arrive();
  if (!r.park(plan, order_ticket_, reroutes, parked_) && w == policy::OrderWait::kClientPath) {
    // No room to hold a partition epochgate would reroute: it falls back.
    plan.wait_refusal = "hold_full";
    end_order_hold();
    return false;
  }
  if (order_hold_started_ns_ == 0) {
    order_hold_started_ns_ = now;
    if (ctx_.metrics) ctx_.metrics->reroute().held(1);
  }
  r.wait_for_order(in_flight_.reroute_sink());
  host_.hold_request();
  return true;
}

void RequestPath::end_order_hold() {
  order_hold_started_ns_ = 0;
  if (ctx_.rerouter != nullptr) ctx_.rerouter->unpark(order_ticket_, parked_);
}

RequestPath::~RequestPath() {
  // The session is going: nothing may re-offer into it.
  in_flight_.reroute_sink()->reoffer = nullptr;
  end_order_hold();
}

void RequestPath::start_reroute(InFlightRequest& e, std::shared_ptr<ReroutePlan> plan,
                                policy::Ticket ticket) {
  // A request held for order keeps the ticket it took when it arrived.
  if (ticket == 0) ticket = ctx_.rerouter->guard().arrive();
  ctx_.rerouter->start(e, std::move(plan), in_flight_.reroute_sink(), ticket, reroute_refusal());
}

RequestPath::Step RequestPath::handle(uint8_t* frame, size_t size) {
  if (sasl_.client_sends_raw_token()) {
    if (!sasl_.rounds_unknown() || !looks_like_request(frame, size))
      return forward_raw_sasl_token(frame, size);
    sasl_.on_request_after_tokens();
  }
  int16_t key = 0, version = 0;
  int32_t corr = 0;
  if (!codec::peek_request_ids(frame, size, key, version, corr)) {
    host_.frame_error(CloseReason::kTruncated, "request header shorter than 8 bytes");
    return Step::kClosed;
  }
  if (ctx_.metrics) ctx_.metrics->request(key);
  host_.count_client_login(sasl_.on_client_request(key));
  if (key == codec::kSaslHandshake && ctx_.config->upstream_sasl.on_behalf_of_clients) {
    refuse_client_sasl(corr, version);
    return Step::kConsumed;
  }
  uint64_t now = now_ns();
  const codec::ApiInfo* info = codec::api_info(key);

  if (key == codec::kApiVersions && info != nullptr && version > info->max_version) {
    // As a broker does: answer v0 with our range so the client retries lower.
    InFlightRequest& e = in_flight_.push(corr, key, version, now);
    in_flight_.add_local_part(e);
    e.response = unsupported_api_versions_response(corr);
    e.ready = true;
    return Step::kConsumed;
  }
  // A response carrying broker addresses must never pass undecoded.
  if (info != nullptr && info->decoded && !info->addresses.empty() && version > info->max_version) {
    host_.frame_error(CloseReason::kUnsupportedVersion,
                std::string(info->name) + " v" + std::to_string(version) +
                    " is newer than epochgate decodes (its ApiVersions said so)");
    return Step::kClosed;
  }

  bool expects_response = true;
  int16_t upstream_version = version;
  // The wait the request itself grants its broker; past it plus
  // limits.upstream_overdue_ms an unanswered request is reported. Long polls
  // whose wait the request does not bound (group rebalances, share sessions)
  // are not watched.
  int32_t own_wait_ms = 0;
  if (key == kJoinGroup || key == kSyncGroup || key == codec::kShareFetch)
    own_wait_ms = -1;
  if (key == codec::kProduce || key == codec::kFetch) {
    codec::RequestHeader h;
    codec::Status st = codec::parse_request_header(frame, size, h);
    if (!st.ok()) {
      host_.frame_error(metrics::close_reason(st.code), "request header: " + st.message());
      return Step::kClosed;
    }
    own_wait_ms = request_own_wait_ms(key, frame + h.size, size - h.size, version).value_or(0);
    if (key == codec::kProduce) {
      auto acks = produce_acks(frame + h.size, size - h.size, version);
      if (!acks) {
        host_.frame_error(CloseReason::kTruncated, "Produce request too short to hold Acks");
        return Step::kClosed;
      }
      expects_response = *acks != 0;
      if (bridging_.produce && version == 10) upstream_version = 9;
    } else if (bridging_.fetch && version == 16) {
      upstream_version = 15;
    }
  }

  std::unique_ptr<EntryContext> forward_context;  // what the policy wants back with the answer
  std::shared_ptr<ReroutePlan> reroute;  // a Produce on a rerouting topic
  policy::Ticket held_ticket = 0;        // its order-guard ticket, if it was held
  if (ctx_.fencing != nullptr && info != nullptr && info->decided.contains(version)) {
    FencingHooks::RequestInput in{node_id_, key, version, corr, frame, size, expects_response};
    in.after_hold = hold_started_ns_ != 0 &&
                    now - hold_started_ns_ >= uint64_t{ctx_.config->policy.hold_timeout_ms} * 1000000;
    in.hold_started_ms = hold_started_ns_ / 1000000;
    in.budget = ctx_.budget;
    in.client = &client_;
    FencingHooks::RequestPlan plan = ctx_.fencing->plan_request(in);
    if (plan.action == FencingHooks::RequestPlan::Action::kHold && !in.after_hold) {
      // Ask again once the refresh had a chance; later requests wait behind
      // this one so per-partition order (idempotent sequences) is kept.
      if (hold_started_ns_ == 0) hold_started_ns_ = now;
      host_.hold_request();
      return Step::kHold;
    }
    hold_started_ns_ = 0;
    reroute = std::move(plan.reroute);
    if (reroute && (reroute->streams.empty() || ctx_.rerouter == nullptr)) reroute.reset();
    if (reroute && hold_for_order(*reroute, now)) return Step::kHold;
    // Only a request that was held carries a ticket into start_reroute.
    held_ticket = std::exchange(order_ticket_, 0);
    switch (plan.action) {
      case FencingHooks::RequestPlan::Action::kForward:
      case FencingHooks::RequestPlan::Action::kHold:
        forward_context = std::move(plan.context);
        break;
      case FencingHooks::RequestPlan::Action::kForwardRewritten: {
        // The plan carries a whole new request frame (size-prefixed).
        if (expects_response) {
          InFlightRequest& e = in_flight_.push(corr, key, version, now);
          e.upstream_version = upstream_version;
          e.own_wait_ms = own_wait_ms;
          e.context = std::move(plan.context);
          // A split: the part epochgate answered waits in the context for
          // the broker's part, and the policy merges them on its answer.
          if (plan.local_part) in_flight_.add_local_part(e);
          in_flight_.mark_forwarded(e, now);
          if (reroute) start_reroute(e, std::move(reroute), held_ticket);
        } else {
          in_flight_.forwarded_without_response(corr);
        }
        if (upstream_version != version) {
          write_be16(plan.frame.data() + 6, upstream_version);
          if (ctx_.metrics) ctx_.metrics->version_downgrade(key);
        }
        upstream_->queue(plan.frame.data(), plan.frame.size());
        return Step::kConsumed;
      }
      case FencingHooks::RequestPlan::Action::kAnswerLocally: {
        InFlightRequest& e = in_flight_.push(corr, key, version, now);
        in_flight_.add_local_part(e);
        e.response = std::move(plan.frame);
        e.ready = true;
        if (reroute) {
          e.ready = false;
          start_reroute(e, std::move(reroute), held_ticket);
          e.ready = e.outstanding() == 0;  // every reroute refused: the local answer
        }
        return Step::kConsumed;
      }
      case FencingHooks::RequestPlan::Action::kForwardThenClose:
        // acks=0: the stale partitions posted to their leader instead of
        // closing the connection; nothing is answered either way.
        if (reroute && reroute->targets.size() == reroute->fenced &&
            ctx_.rerouter->post_all(reroute, reroute_refusal())) {
          in_flight_.forwarded_without_response(corr);
          if (upstream_version != version) write_be16(plan.frame.data() + 6, upstream_version);
          upstream_->queue(plan.frame.data(), plan.frame.size());
          return Step::kConsumed;
        }
        in_flight_.forwarded_without_response(corr);
        if (upstream_version != version) write_be16(plan.frame.data() + 6, upstream_version);
        upstream_->queue(plan.frame.data(), plan.frame.size());
        EPOCHGATE_PROXY_LOG(info, "fenced_acks0", "client {} node {}: closing connection: {}",
                            client_.peer(), node_id_, plan.reason);
        host_.close_once_upstream_written(CloseReason::kFencedAcks0);
        return Step::kClosed;
      case FencingHooks::RequestPlan::Action::kClose:
        if (plan.malformed) {
          host_.frame_error(plan.close_reason, plan.reason);
          return Step::kClosed;
        }
        if (reroute && reroute->targets.size() == reroute->fenced &&
            ctx_.rerouter->post_all(reroute, reroute_refusal()))
          return Step::kConsumed;
        // acks=0 Produce to a stale leader: a broker closes the connection.
        // close() counts the reason.
        EPOCHGATE_PROXY_LOG(info, "fenced_acks0", "client {} node {}: closing connection: {}",
                            client_.peer(), node_id_, plan.reason);
        host_.close(CloseReason::kFencedAcks0);
        return Step::kClosed;
    }
  }

  if (upstream_version != version && ctx_.metrics) ctx_.metrics->version_downgrade(key);
  // The frame sits whole in the client input buffer, size prefix included,
  // and is consumed once this returns (unless the buffer itself went
  // upstream, below): the version, if bridged, is patched in place, and the
  // frame goes out from there.
  uint8_t* own = frame;
  if (upstream_version != version) write_be16(own + 2, upstream_version);
  if (key == codec::kSaslHandshake)
    sasl_.on_handshake_request(version, handshake_mechanism(frame, size));
  // A large frame alone in the client's input buffer (read into a buffer
  // of its own size) goes upstream in that very buffer, never copied: not
  // when the upstream socket is full, not while a write is in flight.
  ByteBuffer& held = client_.input();
  if (size + 4 >= Connection::kWriteThroughBytes && held.size() == size + 4 &&
      held.begin() == own - 4)
    upstream_->write_owned(client_.take_input());
  else
    upstream_->write_through(own - 4, size + 4);
  if (expects_response) {
    InFlightRequest& e = in_flight_.push(corr, key, version, now);
    e.upstream_version = upstream_version;
    e.own_wait_ms = own_wait_ms;
    e.context = std::move(forward_context);
    in_flight_.mark_forwarded(e, now);
    if (reroute) start_reroute(e, std::move(reroute), held_ticket);
  } else {
    in_flight_.forwarded_without_response(corr);
  }
  return Step::kConsumed;
}

}  // namespace epochgate::proxy
