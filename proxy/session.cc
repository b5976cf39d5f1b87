// proxy/session.cc
#include "proxy/session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "codec/api_table.h"
#include "codec/api_versions_io.h"
#include "codec/frame_splitter.h"
#include "codec/message_io.h"
#include "codec/messages/api_traits.h"
#include "codec/reader.h"
#include "codec/writer.h"
#include "metrics/proxy_metrics.h"
#include "proxy/address_rewriter.h"
#include "proxy/api_versions_filter.h"
#include "proxy/fencing_hooks.h"
#include "proxy/log_limited.h"
#include "proxy/request_peek.h"

namespace epochgate::proxy {

using metrics::Direction;
using metrics::Side;

namespace {

uint64_t now_ns() { return uv_hrtime(); }

// Group APIs a broker holds until the group settles (JoinGroup, SyncGroup).
constexpr int16_t kJoinGroup = 11;
constexpr int16_t kSyncGroup = 14;

// Input growth step while a frame is incomplete (bytes).
constexpr size_t kFrameGrowStep = 256 * 1024;

int32_t read_be32(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                              (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

void write_be16(uint8_t* p, int16_t v) {
  p[0] = static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8);
  p[1] = static_cast<uint8_t>(v);
}

void write_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// Encodes `header` + `msg` at `version` as a size-prefixed frame into `out`.
// Bytes a peer sent after the body (brokers ignore them) are kept, so an
// unchanged message re-encodes byte-identical.
template <typename M>
void encode_response_frame(const codec::ResponseHeader& header, const M& msg, int16_t version,
                           std::vector<uint8_t>& out, const codec::Bytes& trailing) {
  out.clear();
  codec::encode_frame(out, header, msg, version);
  if (trailing.size > 0) {
    out.insert(out.end(), trailing.data, trailing.data + trailing.size);
    write_be32(out.data(), static_cast<uint32_t>(out.size() - 4));
  }
}

}  // namespace

Session::Session(WorkerContext& ctx, SessionList& list, int32_t node_id,
                 std::unique_ptr<Transport> client)
    : ctx_(ctx),
      list_(list),
      node_id_(node_id),
      client_(std::move(client), ctx.pool, *this),
      dialer_(ctx.loop, ctx.pool, *this) {
  uv_timer_init(ctx.loop, &connect_timer_);
  connect_timer_.data = this;
  list_.add(this);
  client_.set_budget(ctx.budget, true);
  client_.set_pacer(ctx.pacer);
  last_activity_ns_ = now_ns();
  const auto& lim = ctx_.config->limits;
  client_.set_watermarks(lim.low_watermark_bytes, lim.high_watermark_bytes);
}

Session::~Session() = default;

void Session::start() {
  client_opened_ = true;
  if (ctx_.metrics) ctx_.metrics->connection_opened(Side::kClient, node_id_);
  // Read the client's first frame while the upstream is dialed: a bad size
  // prefix or a client that leaves is handled at once, whatever the broker
  // does; whole frames wait unread by the policy (check_held_client_input).
  client_.start_reading();
  if (node_id_ >= 0) {
    auto addr = ctx_.upstreams->upstream_of(node_id_);
    if (addr) targets_.push_back(*addr);
  } else {
    targets_ = ctx_.upstreams->bootstrap();
  }
  if (targets_.empty()) {
    // A client kept a node address across an epochgate restart: learn it first.
    ctx_.upstreams->request_refresh("unknown_node");
    waiting_for_node_since_ns_ = now_ns();
    uv_timer_start(&connect_timer_, &Session::on_connect_timeout, 100, 0);
    return;
  }
  dial();
}

void Session::dial() {
  state_ = State::kDialing;
  upstream_name_ = targets_.front().to_string();
  // The client's requests stay unread (in its socket) until the broker has
  // answered epochgate's own ApiVersions: nothing of the client's is sent to
  // a broker that might never answer, and no correlation id is shared.
  dialer_.dial(targets_, ctx_.config->limits.upstream_connect_timeout_ms, "epochgate");
}

void Session::on_dial_attempt_failed(const UpstreamDialer::Failure& f) {
  upstream_name_ = f.target.to_string();
  if (ctx_.metrics) ctx_.metrics->upstream_connect_failure(node_id_);
  if (f.stage == UpstreamDialer::Stage::kAnswer) {
    if (ctx_.metrics) ctx_.metrics->upstream_unanswered(node_id_);
    EPOCHGATE_PROXY_LOG(warn, "upstream_unanswered",
                        "upstream {} (node {}): connected, but {} epochgate's ApiVersions "
                        "within {} ms (limits.upstream_connect_timeout_ms){}{}; counted as a "
                        "failed connect",
                        upstream_name_, node_id_,
                        f.status == UV_ETIMEDOUT ? "no answer to" : "no valid answer to",
                        ctx_.config->limits.upstream_connect_timeout_ms,
                        f.status && f.status != UV_ETIMEDOUT ? ": " : "",
                        f.status && f.status != UV_ETIMEDOUT ? uv_strerror(f.status) : "");
    return;
  }
  EPOCHGATE_PROXY_LOG(warn, f.stage == UpstreamDialer::Stage::kResolve ? "upstream_resolve"
                                                                         : "upstream_connect",
                      "upstream {} (node {}): {} failed after {} ms: {}", upstream_name_,
                      node_id_, UpstreamDialer::stage_name(f.stage), f.elapsed_ms,
                      f.status ? uv_strerror(f.status) : "?");
}

void Session::on_dialed(std::unique_ptr<Connection> conn, size_t index,
                        const ApiVersionRanges&) {
  if (state_ == State::kClosing) {
    // Cannot happen (close() cancels the dialer first); never leak a socket.
    conn->set_owner(*this);
    ++open_handles_;
    upstream_ = std::move(conn);
    upstream_->close();
    return;
  }
  conn->set_owner(*this);
  upstream_ = std::move(conn);
  ++open_handles_;
  upstream_->set_budget(ctx_.budget, false);
  upstream_->set_pacer(ctx_.pacer);
  const auto& lim = ctx_.config->limits;
  upstream_->set_watermarks(lim.low_watermark_bytes, lim.high_watermark_bytes);
  upstream_name_ = targets_[index].to_string();
  state_ = State::kOpen;
  upstream_open_ = true;
  if (ctx_.metrics) ctx_.metrics->connection_opened(Side::kUpstream, node_id_);
  spdlog::debug("session {} -> {} (node {}) open", client_.peer(), upstream_name_, node_id_);
  if (logs_in_for_client()) {
    start_own_login();
    if (state_ != State::kOpen) return;
  }
  update_backpressure();
  if (state_ == State::kOpen && !upstream_->input().empty()) process_upstream_input();
}

void Session::start_own_login() {
  own_login_ = std::make_unique<SaslLogin>(ctx_.config->upstream_sasl);
  apply_own_login_step(own_login_->start(own_correlation_++));
}

bool Session::apply_own_login_step(SaslLoginStep step) {
  const std::string& mechanism = ctx_.config->upstream_sasl.mechanism;
  switch (step.kind) {
    case SaslLoginStep::Kind::kSend:
      upstream_->queue(step.frame.data(), step.frame.size());
      upstream_->flush();
      return true;
    case SaslLoginStep::Kind::kDone:
      own_login_.reset();
      if (ctx_.metrics) ctx_.metrics->sasl_authentication("on_behalf", mechanism, true, own_logged_in_);
      own_logged_in_ = true;
      own_relogin_at_ns_ =
          step.session_lifetime_ms > 0
              ? now_ns() + static_cast<uint64_t>(step.session_lifetime_ms) * 850000  // 85 %
              : 0;
      return true;
    case SaslLoginStep::Kind::kFailed:
      own_login_.reset();
      if (ctx_.metrics) ctx_.metrics->sasl_authentication("on_behalf", mechanism, false, own_logged_in_);
      EPOCHGATE_PROXY_LOG(warn, "sasl_login",
                          "SASL login ({}) to {} for client {} failed: {}; closing the client",
                          mechanism, upstream_name_, client_.peer(), step.error);
      close("sasl_login_failed");
      return false;
  }
  return false;
}

void Session::count_client_login(SaslLoginOutcome outcome) {
  if (outcome == SaslLoginOutcome::kNone || !ctx_.metrics) return;
  ctx_.metrics->sasl_authentication("passthrough", sasl_.mechanism_label(),
                                    outcome == SaslLoginOutcome::kOk, false);
}

void Session::refuse_client_sasl(int32_t corr, int16_t version) {
  EPOCHGATE_PROXY_LOG(warn, "client_sasl",
                      "client {} node {}: started its own SASL login, but epochgate logs in "
                      "for it (upstream_sasl.on_behalf_of_clients); configure the client "
                      "without SASL",
                      client_.peer(), node_id_);
  // SaslHandshake response v0/v1: header v0, ErrorCode ILLEGAL_SASL_STATE (34),
  // Mechanisms [] (offering none).
  std::vector<uint8_t> frame = {0, 0, 0, 10, 0, 0, 0, 0, 0, 34, 0, 0, 0, 0};
  write_be32(frame.data() + 4, static_cast<uint32_t>(corr));
  InFlightEntry& e = in_flight_.push(corr, codec::kSaslHandshake, version, now_ns());
  e.response = std::move(frame);
  e.ready = true;
}

void Session::on_dial_failed() { connect_failed("no reachable upstream", 0); }

void Session::on_dialer_closed() {
  dialer_closed_ = true;
  maybe_free();
}

void Session::on_connect_timeout(uv_timer_t* t) {
  auto* s = static_cast<Session*>(t->data);
  if (s->state_ != State::kStarting || !s->targets_.empty()) return;
  // Waiting to learn this node's address from a metadata refresh.
  auto addr = s->ctx_.upstreams->upstream_of(s->node_id_);
  if (addr) {
    s->targets_.push_back(*addr);
    s->dial();
    return;
  }
  uint64_t waited_ms = (now_ns() - s->waiting_for_node_since_ns_) / 1000000;
  if (waited_ms >= s->ctx_.config->limits.upstream_connect_timeout_ms) {
    s->connect_failed("node address unknown", 0);
    return;
  }
  uv_timer_start(&s->connect_timer_, &Session::on_connect_timeout, 100, 0);
}

void Session::on_hold_timer(uv_timer_t* t) {
  auto* s = static_cast<Session*>(t->data);
  if (s->state_ != State::kOpen || s->close_after_write_) return;
  s->holding_ = false;
  s->process_client_input();
}

void Session::connect_failed(const char* why, int status) {
  EPOCHGATE_PROXY_LOG(warn, "upstream_unreachable",
                      "client {} on node {} listener: closing, upstream {}: {}{}{}",
                      client_.peer(), node_id_, upstream_name_.empty() ? "?" : upstream_name_,
                      why, status ? ": " : "", status ? uv_strerror(status) : "");
  close("upstream_unreachable");
}

void Session::close_once_upstream_written(const char* reason) {
  client_.stop_reading();
  upstream_->flush();
  if (upstream_->queued_bytes() == 0) {
    close(reason);
    return;
  }
  // Nothing more is read from the client; responses to its earlier requests
  // still flow. Bounded: a broker that stops reading cannot keep it open.
  close_after_write_ = reason;
  upstream_->notify_when_written();
  uv_timer_stop(&connect_timer_);
  uv_timer_start(
      &connect_timer_,
      [](uv_timer_t* t) {
        auto* s = static_cast<Session*>(t->data);
        if (s->close_after_write_) s->close(s->close_after_write_);
      },
      ctx_.config->limits.upstream_connect_timeout_ms, 0);
}

void Session::close(const char* reason) {
  if (state_ == State::kClosing) return;
  bool was_open = upstream_open_;
  state_ = State::kClosing;
  if (counter_) counter_->fetch_sub(1);
  count_client_login(sasl_.on_connection_closed());
  if (ctx_.metrics) {
    ctx_.metrics->connection_closed_reason(reason);
    if (client_opened_) ctx_.metrics->connection_closed(Side::kClient, node_id_);
    if (was_open) ctx_.metrics->connection_closed(Side::kUpstream, node_id_);
  }
  client_.close();
  if (upstream_) upstream_->close();
  dialer_.close();
  uv_timer_stop(&connect_timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&connect_timer_), &Session::on_timer_closed);
}

void Session::on_timer_closed(uv_handle_t* h) {
  auto* s = static_cast<Session*>(h->data);
  --s->open_handles_;
  s->maybe_free();
}

void Session::on_closed(Connection&) {
  --open_handles_;
  maybe_free();
}

void Session::maybe_free() {
  if (state_ != State::kClosing || open_handles_ > 0 || !dialer_closed_) return;
  list_.remove(this);
  delete this;
}

void Session::begin_drain() {
  if (draining_ || state_ == State::kClosing) return;
  draining_ = true;
  if (in_flight_.empty()) {
    close("drain");
    return;
  }
  update_backpressure();
}

bool Session::close_if_client_gone() {
  if (state_ == State::kClosing || client_.reading() || !client_.peer_closed()) return false;
  close("client_closed");
  return true;
}

bool Session::idle_for(uint64_t now, uint64_t limit_ns) const {
  return in_flight_.empty() && now - last_activity_ns_ > limit_ns;
}

void Session::check_overdue(uint64_t now) {
  uint32_t margin_ms = ctx_.config->limits.upstream_overdue_ms;
  if (margin_ms == 0 || state_ != State::kOpen) return;
  InFlightEntry* e = in_flight_.oldest_awaiting_upstream();
  if (e == nullptr || e->overdue_reported || e->own_wait_ms < 0) return;
  uint64_t waited_ms = (now - e->forwarded_ns) / 1000000;
  uint64_t allowed_ms = static_cast<uint64_t>(e->own_wait_ms) + margin_ms;
  if (waited_ms < allowed_ms) return;
  e->overdue_reported = true;
  if (ctx_.metrics) ctx_.metrics->upstream_overdue(e->api_key);
  const codec::ApiInfo* info = codec::api_info(e->api_key);
  EPOCHGATE_PROXY_LOG(warn, "upstream_overdue",
                      "client {} node {}: {} request (correlation id {}) forwarded to {} {} ms "
                      "ago is unanswered, {} ms past its own wait of {} ms "
                      "(limits.upstream_overdue_ms {})",
                      client_.peer(), node_id_, info ? info->name : "?", e->correlation_id,
                      upstream_name_, waited_ms, waited_ms - e->own_wait_ms, e->own_wait_ms,
                      margin_ms);
}

bool Session::partial_frame_stalled(uint64_t now, uint64_t limit_ns) const {
  return partial_since_ns_ != 0 && now - partial_since_ns_ > limit_ns;
}

void Session::frame_error(const char* reason, const std::string& detail) {
  if (ctx_.metrics) ctx_.metrics->frame_error(reason);
  EPOCHGATE_PROXY_LOG(warn, "frame_error", "client {} node {}: closing connection: {}: {}",
                      client_.peer(), node_id_, reason, detail);
  close(reason);
}

// ---- client -> upstream -----------------------------------------------------

void Session::on_readable(Connection& c) {
  last_activity_ns_ = now_ns();
  if (&c == &client_) {
    process_client_input();
  } else if (&c == upstream_.get()) {
    process_upstream_input();
  }
}

void Session::check_held_client_input() {
  ByteBuffer& in = client_.input();
  if (in.empty()) {
    client_.release_idle_input();
    return;
  }
  codec::FrameScan s = codec::scan_frame(in.begin(), in.size(), ctx_.config->limits.max_frame_bytes);
  if (s.kind == codec::FrameScan::Kind::kError) {
    frame_error(codec::errc_name(s.error), "request frame size prefix");
    return;
  }
  if (s.kind == codec::FrameScan::Kind::kNeedMore) {
    client_.reserve_input(s.size, kFrameGrowStep);
    if (partial_since_ns_ == 0) partial_since_ns_ = now_ns();
    return;
  }
  // A whole request: nothing more is read until the upstream has answered
  // and the request can be decided and forwarded.
  partial_since_ns_ = 0;
  client_.stop_reading();
}

void Session::process_client_input() {
  if (state_ == State::kStarting || state_ == State::kDialing) {
    check_held_client_input();
    return;
  }
  if (processing_client_) return;  // re-entered from update_backpressure()
  processing_client_ = true;
  ByteBuffer& in = client_.input();
  const auto& lim = ctx_.config->limits;
  size_t forwarded_bytes = 0;
  while (state_ == State::kOpen && !in.empty() && !draining_ && !holding_ &&
         !sasl_.holds_client_input() && !close_after_write_ && !own_login_) {
    if (in_flight_.size() >= lim.max_in_flight_per_connection) break;
    if (own_relogin_at_ns_ != 0 && now_ns() >= own_relogin_at_ns_) {
      // KIP-368: log in again before the broker's session ends, once the
      // broker has answered everything before (responses stay in order).
      if (in_flight_.upstream_pending() == 0) start_own_login();
      break;
    }
    codec::FrameScan s = codec::scan_frame(in.begin(), in.size(), lim.max_frame_bytes);
    if (s.kind == codec::FrameScan::Kind::kError) {
      processing_client_ = false;
      frame_error(codec::errc_name(s.error), "request frame size prefix");
      return;
    }
    if (s.kind == codec::FrameScan::Kind::kNeedMore) {
      // Room for the next part of the frame, not all of it: a peer announcing
      // a large frame gets memory as its bytes arrive (buffer budget).
      client_.reserve_input(s.size, kFrameGrowStep);
      if (partial_since_ns_ == 0) partial_since_ns_ = now_ns();
      break;
    }
    partial_since_ns_ = 0;
    uint64_t before = upstream_->bytes_accepted();
    Step step = handle_request(in.begin() + 4, s.size);
    if (step == Step::kClosed) {
      processing_client_ = false;
      return;
    }
    if (step == Step::kHold) break;
    forwarded_bytes += upstream_->bytes_accepted() - before;
    if (in.size() >= 4 + s.size) in.consume(4 + s.size);  // else it went upstream whole
    client_.clear_pending_frame();
  }
  if (in.empty()) {
    partial_since_ns_ = 0;
    client_.release_idle_input();
  }
  if (ctx_.metrics && forwarded_bytes) ctx_.metrics->bytes(Direction::kClientToUpstream, forwarded_bytes);
  processing_client_ = false;
  if (state_ != State::kOpen) return;
  upstream_->flush();
  flush_ready();
  client_.flush();
  update_backpressure();
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

Session::Step Session::forward_raw_sasl_token(const uint8_t* frame, size_t size) {
  // Not a request: no header to read, nothing counted under an API label.
  upstream_->write_through(frame - 4, size + 4);
  uint64_t now = now_ns();
  InFlightEntry& e = in_flight_.push(0, codec::kSaslAuthenticate, 0, now);
  e.raw_sasl_token = true;
  in_flight_.mark_forwarded(e, now);
  sasl_.on_client_token();
  return Step::kConsumed;
}

bool Session::deliver_raw_sasl_token(const uint8_t* frame, size_t size) {
  InFlightEntry* e = in_flight_.match_next_owed();
  if (e == nullptr || !e->raw_sasl_token) {
    frame_error("unexpected_sasl_token",
                "upstream " + upstream_name_ + " answered a SASL token out of turn");
    return false;
  }
  e->answered_ns = now_ns();
  deliver(*e, frame - 4, size + 4);
  sasl_.on_broker_token(size);
  sasl_resume_client_ = true;
  return true;
}

Session::Step Session::handle_request(const uint8_t* frame, size_t size) {
  if (sasl_.client_sends_raw_token()) {
    if (!sasl_.rounds_unknown() || !looks_like_request(frame, size))
      return forward_raw_sasl_token(frame, size);
    sasl_.on_request_after_tokens();
  }
  int16_t key = 0, version = 0;
  int32_t corr = 0;
  if (!codec::peek_request_ids(frame, size, key, version, corr)) {
    frame_error("truncated", "request header shorter than 8 bytes");
    return Step::kClosed;
  }
  if (ctx_.metrics) ctx_.metrics->request(key);
  count_client_login(sasl_.on_client_request(key));
  if (key == codec::kSaslHandshake && logs_in_for_client()) {
    refuse_client_sasl(corr, version);
    return Step::kConsumed;
  }
  uint64_t now = now_ns();
  const codec::ApiInfo* info = codec::api_info(key);

  if (key == codec::kApiVersions && info != nullptr && version > info->max_version) {
    // As a broker does: answer v0 with our range so the client retries lower.
    InFlightEntry& e = in_flight_.push(corr, key, version, now);
    e.response = unsupported_api_versions_response(corr);
    e.ready = true;
    return Step::kConsumed;
  }
  // A response carrying broker addresses must never pass undecoded.
  if (info != nullptr && info->decoded && !info->addresses.empty() && version > info->max_version) {
    frame_error("unsupported_version",
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
      frame_error(codec::errc_name(st.code), "request header: " + st.message());
      return Step::kClosed;
    }
    own_wait_ms = request_own_wait_ms(key, frame + h.size, size - h.size, version).value_or(0);
    if (key == codec::kProduce) {
      auto acks = produce_acks(frame + h.size, size - h.size, version);
      if (!acks) {
        frame_error("truncated", "Produce request too short to hold Acks");
        return Step::kClosed;
      }
      expects_response = *acks != 0;
      if (bridge_produce_ && version == 10) upstream_version = 9;
    } else if (bridge_fetch_ && version == 16) {
      upstream_version = 15;
    }
  }

  std::unique_ptr<EntryContext> forward_context;  // what the policy wants back with the answer
  if (ctx_.fencing != nullptr && info != nullptr && info->decided.contains(version)) {
    FencingHooks::RequestInput in{node_id_, key, version, corr, frame, size, expects_response};
    in.after_hold = hold_started_ns_ != 0 &&
                    now - hold_started_ns_ >= uint64_t{ctx_.config->policy.hold_timeout_ms} * 1000000;
    in.hold_started_ms = hold_started_ns_ / 1000000;
    in.budget = ctx_.budget;
    FencingHooks::RequestPlan plan = ctx_.fencing->plan_request(in);
    if (plan.action == FencingHooks::RequestPlan::Action::kHold && !in.after_hold) {
      // Ask again once the refresh had a chance; later requests wait behind
      // this one so per-partition order (idempotent sequences) is kept.
      if (hold_started_ns_ == 0) hold_started_ns_ = now;
      holding_ = true;
      uv_timer_start(&connect_timer_, &Session::on_hold_timer, 20, 0);
      return Step::kHold;
    }
    hold_started_ns_ = 0;
    switch (plan.action) {
      case FencingHooks::RequestPlan::Action::kForward:
      case FencingHooks::RequestPlan::Action::kHold:
        forward_context = std::move(plan.context);
        break;
      case FencingHooks::RequestPlan::Action::kForwardRewritten: {
        // The plan carries a whole new request frame (size-prefixed).
        if (expects_response) {
          InFlightEntry& e = in_flight_.push(corr, key, version, now);
          e.upstream_version = upstream_version;
          e.own_wait_ms = own_wait_ms;
          e.context = std::move(plan.context);
          in_flight_.mark_forwarded(e, now);
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
        InFlightEntry& e = in_flight_.push(corr, key, version, now);
        e.response = std::move(plan.frame);
        e.ready = true;
        return Step::kConsumed;
      }
      case FencingHooks::RequestPlan::Action::kForwardThenClose:
        in_flight_.forwarded_without_response(corr);
        if (upstream_version != version) write_be16(plan.frame.data() + 6, upstream_version);
        upstream_->queue(plan.frame.data(), plan.frame.size());
        EPOCHGATE_PROXY_LOG(info, "fenced_acks0", "client {} node {}: closing connection: {}",
                            client_.peer(), node_id_, plan.reason);
        close_once_upstream_written("fenced_acks0");
        return Step::kClosed;
      case FencingHooks::RequestPlan::Action::kClose:
        if (plan.malformed) {
          frame_error(plan.close_reason, plan.reason);
          return Step::kClosed;
        }
        // acks=0 Produce to a stale leader: a broker closes the connection.
        // close() counts the reason.
        EPOCHGATE_PROXY_LOG(info, "fenced_acks0", "client {} node {}: closing connection: {}",
                            client_.peer(), node_id_, plan.reason);
        close("fenced_acks0");
        return Step::kClosed;
    }
  }

  if (upstream_version != version && ctx_.metrics) ctx_.metrics->version_downgrade(key);
  // The frame sits whole in the client input buffer, size prefix included,
  // and is consumed once this returns: the version, if bridged, is patched
  // in place, and the frame goes out from there.
  uint8_t* own = const_cast<uint8_t*>(frame);
  if (upstream_version != version) write_be16(own + 2, upstream_version);
  if (key == codec::kSaslHandshake)
    sasl_.on_handshake_request(version, handshake_mechanism(frame, size));
  // A frame of a MiB or more that fills the client's input buffer goes
  // upstream in that very buffer: copying it would hold the loop.
  ByteBuffer& held = client_.input();
  if (size + 4 >= ReadPacer::kBytesPerTurn && held.size() == size + 4 && held.begin() == own - 4 &&
      upstream_->can_write_buffer())
    upstream_->write_buffer(client_.take_input());
  else
    upstream_->write_through(own - 4, size + 4);
  if (expects_response) {
    InFlightEntry& e = in_flight_.push(corr, key, version, now);
    e.upstream_version = upstream_version;
    e.own_wait_ms = own_wait_ms;
    e.context = std::move(forward_context);
    in_flight_.mark_forwarded(e, now);
  } else {
    in_flight_.forwarded_without_response(corr);
  }
  return Step::kConsumed;
}

// ---- upstream -> client -----------------------------------------------------

void Session::process_upstream_input() {
  ByteBuffer& in = upstream_->input();
  const auto& lim = ctx_.config->limits;
  uint64_t delivered = client_.bytes_accepted();
  while (state_ == State::kOpen && !in.empty()) {
    codec::FrameScan s = codec::scan_frame(in.begin(), in.size(), lim.max_frame_bytes);
    if (s.kind == codec::FrameScan::Kind::kError) {
      frame_error(codec::errc_name(s.error), "response frame size prefix from " + upstream_name_);
      return;
    }
    if (s.kind == codec::FrameScan::Kind::kNeedMore) {
      upstream_->reserve_input(s.size, kFrameGrowStep);
      break;
    }
    if (own_login_) {
      if (!apply_own_login_step(own_login_->on_response(in.begin() + 4, s.size,
                                                        own_correlation_++)))
        return;
      in.consume(4 + s.size);
      upstream_->clear_pending_frame();
      if (!own_login_) sasl_resume_client_ = true;  // logged in: client frames flow
      continue;
    }
    if (!handle_response(in.begin() + 4, s.size)) return;
    in.consume(4 + s.size);
    upstream_->clear_pending_frame();
    if (own_relogin_at_ns_ != 0 && in_flight_.upstream_pending() == 0)
      sasl_resume_client_ = true;  // a re-login may have waited for this answer
  }
  if (in.empty()) upstream_->release_idle_input();
  if (state_ != State::kOpen) return;
  if (sasl_resume_client_) {
    // Client frames held behind a SASL answer can be read now.
    sasl_resume_client_ = false;
    if (!sasl_.holds_client_input() && !own_login_ && !client_.input().empty()) {
      process_client_input();
      if (state_ != State::kOpen) return;
    }
  }
  flush_ready();
  uint64_t after = client_.bytes_accepted();
  if (ctx_.metrics && after > delivered) ctx_.metrics->bytes(Direction::kUpstreamToClient, after - delivered);
  client_.flush();
  if (draining_ && in_flight_.empty()) {
    close("drain");
    return;
  }
  update_backpressure();
}

bool Session::handle_response(const uint8_t* frame, size_t size) {
  if (sasl_.broker_sends_raw_token()) return deliver_raw_sasl_token(frame, size);
  if (size < 4) {
    frame_error("truncated", "response shorter than a correlation id from " + upstream_name_);
    return false;
  }
  int32_t corr = read_be32(frame);
  InFlightEntry* e = nullptr;
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
      frame_error("unexpected_correlation_id",
                  "upstream " + upstream_name_ + " answered " + std::to_string(corr) +
                      " before an earlier request");
      return false;
  }
  uint64_t now = now_ns();
  e->answered_ns = now;
  if (e->api_key == codec::kSaslHandshake) {
    // Response header v0 (correlation id), then ErrorCode.
    int16_t error_code = size >= 6 ? static_cast<int16_t>((frame[4] << 8) | frame[5]) : -1;
    count_client_login(sasl_.on_handshake_response(error_code));
    sasl_resume_client_ = true;
  } else if (e->api_key == codec::kSaslAuthenticate) {
    codec::ResponseHeader h;
    if (codec::parse_response_header(frame, size,
                                     codec::response_header_version(e->api_key, e->upstream_version),
                                     h).ok() &&
        size >= h.size + 2)
      count_client_login(sasl_.on_authenticate_response(
          static_cast<int16_t>((frame[h.size] << 8) | frame[h.size + 1])));
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
    bool changed = false;
    if (!transform_response(*e, frame, size, rewritten, changed)) return false;
    if (changed) {
      deliver(*e, rewritten.data(), rewritten.size());
      return true;
    }
  }
  deliver(*e, frame - 4, size + 4);
  return true;
}

void Session::deliver(InFlightEntry& e, const uint8_t* frame_with_prefix, size_t len) {
  if (in_flight_.is_front(e)) {
    client_.write_through(frame_with_prefix, len);
    record_proxy_latency(e);
    in_flight_.pop_front();
    return;
  }
  e.response.assign(frame_with_prefix, frame_with_prefix + len);
  e.ready = true;
}

void Session::record_proxy_latency(const InFlightEntry& e) {
  if (!ctx_.metrics) return;
  // Time epochgate held the request before forwarding plus the time it held
  // the response after the broker's answer; the broker's own time excluded.
  uint64_t now = now_ns();
  uint64_t held = e.forwarded_ns ? (e.forwarded_ns - e.received_ns) + (now - e.answered_ns)
                                 : now - e.received_ns;
  ctx_.metrics->proxy_latency(static_cast<double>(held) / 1e9);
}

void Session::flush_ready() {
  while (InFlightEntry* f = in_flight_.front()) {
    if (!f->ready) break;
    client_.queue(f->response.data(), f->response.size());
    record_proxy_latency(*f);
    in_flight_.pop_front();
  }
}

bool Session::transform_response(InFlightEntry& e, const uint8_t* frame, size_t size,
                                 std::vector<uint8_t>& out, bool& changed) {
  const int16_t key = e.api_key;
  const int16_t up_version = e.upstream_version;
  const int16_t client_version = e.api_version;
  codec::ResponseHeader h;
  codec::Status st =
      codec::parse_response_header(frame, size, codec::response_header_version(key, up_version), h);
  if (!st.ok()) {
    frame_error(codec::errc_name(st.code), "response header from " + upstream_name_);
    return false;
  }
  const uint8_t* body = frame + h.size;
  size_t body_len = size - h.size;
  // The client gets the header version of the version it asked for.
  h.header_version = codec::response_header_version(key, client_version);
  switch (key) {
    case codec::kApiVersions: {
      codec::ApiVersionsResponse m;
      int16_t used_version = up_version;
      codec::Status s =
          codec::decode_api_versions_response(body, body_len, up_version, m, used_version);
      // A broker refusing the version (error 35, body in v0) or a body that
      // decodes in neither version: the client handles it as from the broker.
      if (!s.ok() || m.error_code != 0) return true;
      for (const auto& k : m.api_keys) {
        if (k.api_key == codec::kProduce) broker_max_produce_ = k.max_version;
        if (k.api_key == codec::kFetch) broker_max_fetch_ = k.max_version;
      }
      bool bridge = ctx_.config->policy.kip951_bridge && ctx_.fencing != nullptr;
      if (cap_api_versions(m, bridge) > 0) {
        bridge_produce_ = bridge && broker_max_produce_ == 9;
        bridge_fetch_ = bridge && broker_max_fetch_ == 15;
        if (ctx_.metrics) ctx_.metrics->api_versions_capped();
        encode_response_frame(h, m, used_version, out, codec::Bytes{});
        changed = true;
      }
      return true;
    }
    default:
      break;
  }
  // Responses that carry broker addresses: decode, learn, rewrite, amend.
  enum class Done { kOk, kFailed, kNotAddressed };
  Done done = codec::with_api(key, Done::kNotAddressed, [&](auto api) {
    using M = typename decltype(api)::Response;
    if constexpr (codec::kCarriesAddresses<M>)
      return rewrite_response<M>(e, h, body, body_len, out, changed) ? Done::kOk : Done::kFailed;
    else
      return Done::kNotAddressed;
  });
  if (done != Done::kNotAddressed) return done == Done::kOk;
  if (ctx_.fencing) {
    std::string error;
    if (!ctx_.fencing->on_other_response(e, node_id_, h, body, body_len, out, changed, error)) {
      frame_error("malformed_response", error + " from " + upstream_name_);
      return false;
    }
  }
  return true;
}

template <typename M>
bool Session::rewrite_response(InFlightEntry& e, codec::ResponseHeader& h, const uint8_t* body,
                               size_t body_len, std::vector<uint8_t>& out, bool& changed) {
  M m;
  codec::Bytes trailing;
  codec::Status s =
      codec::decode_body_allow_trailing(body, body_len, e.upstream_version, m, trailing);
  if (!s.ok()) {
    frame_error(codec::errc_name(s.code),
                std::string(M::kName) + " from " + upstream_name_ + ": " + s.message());
    return false;
  }
  constexpr bool kHinted = codec::kCarriesHints<M>;
  // Learn first (upstream addresses), then rewrite what the broker sent, then
  // let the policy add what it adds (epochgate addresses only).
  if (ctx_.fencing) {
    if constexpr (std::is_same_v<M, codec::MetadataResponse>) {
      ctx_.fencing->learn_metadata(m, e.upstream_version);
    } else if constexpr (kHinted) {
      ctx_.fencing->learn_response(&m, e.upstream_version, node_id_);
    }
  }
  RewriteResult r = rewrite_addresses(m, e.api_version, *ctx_.endpoints);
  if (r.failed) {
    frame_error("endpoint_unmapped", "no listener for a broker node id in a response");
    return false;
  }
  if (r.rewritten > 0 && ctx_.metrics) {
    ctx_.metrics->addresses_rewritten(e.api_key, r.rewritten);
    // A broker's own KIP-951 hint, now pointing at epochgate.
    if constexpr (kHinted)
      for (int i = 0; i < r.rewritten; ++i) ctx_.metrics->hint("rewritten");
  }
  bool touched = e.upstream_version != e.api_version || r.rewritten > 0;
  if constexpr (kHinted) {
    if (ctx_.fencing) touched |= ctx_.fencing->amend_response(e, &m, e.api_version, node_id_);
  }
  if (touched) {
    encode_response_frame(h, m, e.api_version, out, trailing);
    changed = true;
  }
  return true;
}

// ---- backpressure and errors ------------------------------------------------

void Session::update_backpressure() {
  if (state_ != State::kOpen || close_after_write_) return;
  const auto& lim = ctx_.config->limits;
  bool over_budget = ctx_.budget != nullptr && ctx_.budget->exceeded();
  bool client_should_read = !draining_ && !upstream_->above_high_watermark() &&
                            in_flight_.size() < lim.max_in_flight_per_connection && !over_budget;
  if (over_budget && !budget_paused_ && client_.reading()) {
    pause_for_budget();
  } else if (!over_budget) {
    budget_paused_ = false;
  }
  bool upstream_should_read = !client_.above_high_watermark();
  if (client_should_read && !client_.reading()) {
    client_.start_reading();
    client_paused_ = false;
    // Whole frames may still wait in the buffer from before the pause.
    if (!client_.input().empty()) process_client_input();
  } else if (!client_should_read && client_.reading()) {
    client_.stop_reading();
    if (in_flight_.size() >= lim.max_in_flight_per_connection)
      EPOCHGATE_PROXY_LOG(info, "max_in_flight",
                          "client {} node {}: {} requests in flight "
                          "(limits.max_in_flight_per_connection); reading more once responses "
                          "arrive",
                          client_.peer(), node_id_, in_flight_.size());
    if (!client_paused_ && ctx_.metrics && !draining_)
      ctx_.metrics->backpressure_pause(Direction::kClientToUpstream);
    client_paused_ = true;
  }
  if (state_ != State::kOpen) return;
  if (upstream_should_read && !upstream_->reading()) {
    upstream_->start_reading();
    upstream_paused_ = false;
  } else if (!upstream_should_read && upstream_->reading()) {
    upstream_->stop_reading();
    if (!upstream_paused_ && ctx_.metrics)
      ctx_.metrics->backpressure_pause(Direction::kUpstreamToClient);
    upstream_paused_ = true;
  }
}

void Session::pause_for_budget() {
  if (ctx_.budget_recheck) ctx_.budget_recheck();
  if (budget_paused_) return;
  budget_paused_ = true;
  if (ctx_.metrics) ctx_.metrics->buffer_budget_pause();
  EPOCHGATE_PROXY_LOG(warn, "buffer_budget",
                      "client {} node {}: connection buffers hold {} bytes, over "
                      "limits.buffer_budget_bytes {}; client reads pause until they drain",
                      client_.peer(), node_id_, ctx_.budget ? ctx_.budget->used() : 0,
                      ctx_.config->limits.buffer_budget_bytes);
}

void Session::on_drained(Connection& c) {
  if (close_after_write_) {
    if (&c == upstream_.get() && upstream_->queued_bytes() == 0) close(close_after_write_);
    return;
  }
  update_backpressure();
}

void Session::on_read_error(Connection& c, int status) {
  if (status == UV_ENOBUFS) {
    // Over the buffer budget with a full buffer: wait for the budget.
    pause_for_budget();
    if (&c == &client_) client_paused_ = true;
    return;
  }
  if (&c == &client_) {
    if (status != UV_EOF) spdlog::debug("client {}: read error: {}", c.peer(), uv_strerror(status));
    close(status == UV_EOF ? "client_closed" : "client_error");
    return;
  }
  if (&c != upstream_.get()) return;
  EPOCHGATE_PROXY_LOG(info, "upstream_closed",
                      "upstream {} (node {}) closed the connection{}{}; closing client {}",
                      upstream_name_, node_id_, status == UV_EOF ? "" : ": ",
                      status == UV_EOF ? "" : uv_strerror(status), client_.peer());
  close(status == UV_EOF ? "upstream_closed" : "upstream_error");
}

void Session::on_write_error(Connection& c, int status) {
  spdlog::debug("{} write error: {}", &c == &client_ ? "client" : "upstream", uv_strerror(status));
  close(&c == &client_ ? "client_error" : "upstream_error");
}

// ---- SessionList ------------------------------------------------------------

void SessionList::add(Session* s) {
  s->prev = nullptr;
  s->next = head_;
  if (head_) head_->prev = s;
  head_ = s;
  ++size_;
}

void SessionList::remove(Session* s) {
  if (s->prev) s->prev->next = s->next; else head_ = s->next;
  if (s->next) s->next->prev = s->prev;
  s->prev = s->next = nullptr;
  --size_;
}

}  // namespace epochgate::proxy
