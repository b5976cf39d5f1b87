// proxy/session/request_path.cc
#include "proxy/session/request_path.h"

#include <memory>
#include <optional>
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
std::string_view handshake_mechanism(const RequestFrame& f) {
  if (!f.header_parsed || f.body_size() < 2) return {};
  const uint8_t* body = f.body();
  size_t len = (size_t{body[0]} << 8) | body[1];
  if (len > f.body_size() - 2) return {};
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

RequestPath::Step RequestPath::handle(uint8_t* data, size_t size) {
  if (sasl_.client_sends_raw_token()) {
    if (!sasl_.rounds_unknown() || !looks_like_request(data, size))
      return forward_raw_sasl_token(data, size);
    sasl_.on_request_after_tokens();
  }
  RequestFrame f;
  f.data = data;
  f.size = size;
  if (!read_ids(f)) return Step::kClosed;
  if (std::optional<Step> answered = answer_before_forwarding(f)) return *answered;
  if (!read_header(f)) return Step::kClosed;
  const uint64_t now = now_ns();
  if (!f.decided) return forward(f, now, Planned{});
  return follow_plan(f, now);
}

bool RequestPath::read_ids(RequestFrame& f) {
  codec::RequestHeader& h = f.header;
  if (!codec::peek_request_ids(f.data, f.size, h.api_key, h.api_version, h.correlation_id)) {
    host_.frame_error(CloseReason::kTruncated, "request header shorter than 8 bytes");
    return false;
  }
  if (ctx_.metrics) ctx_.metrics->request(h.api_key);
  host_.count_client_login(sasl_.on_client_request(h.api_key));
  f.info = codec::api_info(h.api_key);
  f.upstream_version = h.api_version;
  return true;
}

std::optional<RequestPath::Step> RequestPath::answer_before_forwarding(const RequestFrame& f) {
  const int16_t key = f.api_key();
  const int16_t version = f.api_version();
  if (key == codec::kSaslHandshake && ctx_.config->upstream_sasl.on_behalf_of_clients) {
    refuse_client_sasl(f.correlation_id(), version);
    return Step::kConsumed;
  }
  if (f.info == nullptr || version <= f.info->max_version) return std::nullopt;
  if (key == codec::kApiVersions) {
    // As a broker does: answer v0 with our range so the client retries lower.
    InFlightRequest& e = in_flight_.push(f.correlation_id(), key, version, now_ns());
    in_flight_.add_local_part(e);
    e.response = unsupported_api_versions_response(f.correlation_id());
    e.ready = true;
    return Step::kConsumed;
  }
  // A response carrying broker addresses must never pass undecoded.
  if (f.info->decoded && !f.info->addresses.empty()) {
    host_.frame_error(CloseReason::kUnsupportedVersion,
                      std::string(f.info->name) + " v" + std::to_string(version) +
                          " is newer than epochgate decodes (its ApiVersions said so)");
    return Step::kClosed;
  }
  return std::nullopt;
}

bool RequestPath::read_header(RequestFrame& f) {
  const int16_t key = f.api_key();
  const int16_t version = f.api_version();
  // Long polls whose wait the request does not bound (group rebalances,
  // share sessions) are not watched for overdue answers.
  if (key == kJoinGroup || key == kSyncGroup || key == codec::kShareFetch) f.own_wait_ms = -1;
  f.decided = ctx_.fencing != nullptr && f.info != nullptr && f.info->decided.contains(version);
  const bool peeks_body = key == codec::kProduce || key == codec::kFetch;
  if (!peeks_body && !f.decided && key != codec::kSaslHandshake) return true;
  codec::Status st = codec::parse_request_header(f.data, f.size, f.header);
  f.header_parsed = st.ok();
  if (!st.ok()) {
    // A SaslHandshake goes on as it is (a broker answers it); a request
    // epochgate must read closes the connection.
    if (key == codec::kSaslHandshake) return true;
    host_.frame_error(peeks_body ? metrics::close_reason(st.code) : CloseReason::kMalformedRequest,
                      "request header: " + st.message());
    return false;
  }
  if (!peeks_body) return true;
  if (!read_body_facts(f)) {
    host_.frame_error(CloseReason::kTruncated, "Produce request too short to hold Acks");
    return false;
  }
  return true;
}

bool RequestPath::read_body_facts(RequestFrame& f) {
  const int16_t key = f.api_key();
  const int16_t version = f.api_version();
  f.own_wait_ms = request_own_wait_ms(key, f.body(), f.body_size(), version).value_or(0);
  if (key == codec::kProduce) {
    std::optional<int16_t> acks = produce_acks(f.body(), f.body_size(), version);
    if (!acks) return false;
    f.expects_response = *acks != 0;
    if (bridging_.produce && version == 10) f.upstream_version = 9;
  } else if (bridging_.fetch && version == 16) {
    f.upstream_version = 15;
  }
  return true;
}

bool RequestPath::forward_head(RequestFrame& f) {
  if (sasl_.client_sends_raw_token() || holds_request()) return false;
  codec::RequestHeader& h = f.header;
  if (!codec::peek_request_ids(f.data, f.size, h.api_key, h.api_version, h.correlation_id) ||
      h.api_key != codec::kProduce)
    return false;
  f.info = codec::api_info(h.api_key);
  f.upstream_version = h.api_version;
  if (f.info == nullptr || h.api_version > f.info->max_version) return false;
  f.decided = ctx_.fencing != nullptr && f.info->decided.contains(h.api_version);
  f.header_parsed = codec::parse_request_header(f.data, f.size, f.header).ok();
  // A bridged version is patched in the client's buffer: read whole.
  if (!f.header_parsed || !read_body_facts(f) || f.bridged()) return false;
  const uint64_t now = now_ns();
  Planned p;
  if (f.decided) {
    FencingHooks::RequestInput in;
    in.node_id = node_id_;
    in.frame = &f;
    in.now_ns = now;
    in.budget = ctx_.budget;
    in.client = &client_;
    in.head_only = true;
    FencingHooks::RequestPlan plan = ctx_.fencing->plan_request(in);
    if (plan.whole_frame || plan.action != FencingHooks::RequestPlan::Action::kForward ||
        plan.reroute)
      return false;
    p.context = std::move(plan.context);
  }
  // What read_ids() counts, now that the request goes.
  if (ctx_.metrics) ctx_.metrics->request(h.api_key);
  host_.count_client_login(sasl_.on_client_request(h.api_key));
  owe_answer(f, now, p, false);
  return true;
}

void RequestPath::bridge_version(const RequestFrame& f, uint8_t* payload) {
  if (!f.bridged()) return;
  write_be16(payload + 2, static_cast<uint16_t>(f.upstream_version));
  if (ctx_.metrics) ctx_.metrics->version_downgrade(f.api_key());
}

void RequestPath::owe_answer(const RequestFrame& f, uint64_t now, Planned& p, bool local_part) {
  if (!f.expects_response) {
    in_flight_.forwarded_without_response(f.correlation_id());
    return;
  }
  InFlightRequest& e = in_flight_.push(f.correlation_id(), f.api_key(), f.api_version(), now);
  e.upstream_version = f.upstream_version;
  e.own_wait_ms = f.own_wait_ms;
  e.context = std::move(p.context);
  // A split: the part epochgate answered waits in the context for the
  // broker's part, and the policy merges them on its answer.
  if (local_part) in_flight_.add_local_part(e);
  in_flight_.mark_forwarded(e, now);
  if (p.reroute) start_reroute(e, std::move(p.reroute), p.ticket);
}

RequestPath::Step RequestPath::follow_plan(RequestFrame& f, uint64_t now) {
  FencingHooks::RequestInput in;
  in.node_id = node_id_;
  in.frame = &f;
  in.after_hold = hold_started_ns_ != 0 &&
                  now - hold_started_ns_ >= uint64_t{ctx_.config->policy.hold_timeout_ms} * 1000000;
  in.hold_started_ms = hold_started_ns_ / 1000000;
  in.now_ns = now;
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
  Planned p;
  p.reroute = std::move(plan.reroute);
  if (p.reroute && (p.reroute->streams.empty() || ctx_.rerouter == nullptr)) p.reroute.reset();
  if (p.reroute && hold_for_order(*p.reroute, now)) return Step::kHold;
  // Only a request that was held carries a ticket into start_reroute.
  p.ticket = std::exchange(order_ticket_, 0);
  switch (plan.action) {
    case FencingHooks::RequestPlan::Action::kForward:
    case FencingHooks::RequestPlan::Action::kHold:
      p.context = std::move(plan.context);
      return forward(f, now, std::move(p));
    case FencingHooks::RequestPlan::Action::kForwardRewritten:
      // The plan carries a whole new request frame (size-prefixed).
      p.context = std::move(plan.context);
      owe_answer(f, now, p, plan.local_part);
      bridge_version(f, plan.frame.data() + 4);
      upstream_->queue(plan.frame.data(), plan.frame.size());
      return Step::kConsumed;
    case FencingHooks::RequestPlan::Action::kAnswerLocally:
      answer_locally(f, std::move(plan.frame), now, p);
      return Step::kConsumed;
    case FencingHooks::RequestPlan::Action::kForwardThenClose:
    case FencingHooks::RequestPlan::Action::kClose:
      return close_for_acks0(f, plan, p);
  }
  return Step::kConsumed;
}

void RequestPath::answer_locally(const RequestFrame& f, std::vector<uint8_t> frame, uint64_t now,
                                 Planned& p) {
  InFlightRequest& e = in_flight_.push(f.correlation_id(), f.api_key(), f.api_version(), now);
  in_flight_.add_local_part(e);
  e.response = std::move(frame);
  e.ready = true;
  if (p.reroute) {
    e.ready = false;
    start_reroute(e, std::move(p.reroute), p.ticket);
    e.ready = e.outstanding() == 0;  // every reroute refused: the local answer
  }
}

RequestPath::Step RequestPath::close_for_acks0(const RequestFrame& f,
                                               FencingHooks::RequestPlan& plan, Planned& p) {
  const bool forwards = plan.action == FencingHooks::RequestPlan::Action::kForwardThenClose;
  if (!forwards && plan.malformed) {
    host_.frame_error(plan.close_reason, plan.reason);
    return Step::kClosed;
  }
  // acks=0: the stale partitions posted to their leader instead of closing
  // the connection; nothing is answered either way.
  const bool posted = p.reroute && p.reroute->targets.size() == p.reroute->fenced &&
                      ctx_.rerouter->post_all(p.reroute, reroute_refusal());
  if (forwards) {
    // The partitions this broker leads go to it first (as a broker appends
    // them before it closes the connection).
    in_flight_.forwarded_without_response(f.correlation_id());
    bridge_version(f, plan.frame.data() + 4);
    upstream_->queue(plan.frame.data(), plan.frame.size());
  }
  if (posted) return Step::kConsumed;
  EPOCHGATE_PROXY_LOG(info, "fenced_acks0", "client {} node {}: closing connection: {}",
                      client_.peer(), node_id_, plan.reason);
  // acks=0 Produce to a stale leader: a broker closes the connection.
  // close() counts the reason.
  if (forwards) host_.close_once_upstream_written(CloseReason::kFencedAcks0);
  else host_.close(CloseReason::kFencedAcks0);
  return Step::kClosed;
}

RequestPath::Step RequestPath::forward(RequestFrame& f, uint64_t now, Planned p) {
  // The frame sits whole in the client input buffer, size prefix included,
  // and is consumed once this returns (unless the buffer itself went
  // upstream, below): the version, if bridged, is patched in place, and the
  // frame goes out from there.
  bridge_version(f, f.data);
  if (f.api_key() == codec::kSaslHandshake)
    sasl_.on_handshake_request(f.api_version(), handshake_mechanism(f));
  // A large frame alone in the client's input buffer (read into a buffer
  // of its own size) goes upstream in that very buffer, never copied: not
  // when the upstream socket is full, not while a write is in flight.
  ByteBuffer& held = client_.input();
  if (f.size + 4 >= Connection::kWriteThroughBytes && held.size() == f.size + 4 &&
      held.begin() == f.data - 4)
    upstream_->write_owned(client_.take_input());
  else
    upstream_->write_through(f.data - 4, f.size + 4);
  owe_answer(f, now, p, false);
  return Step::kConsumed;
}

}  // namespace epochgate::proxy
