// proxy/session/session.cc
#include "proxy/session/session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "codec/api_table.h"
#include "codec/frame_splitter.h"
#include "metrics/proxy_metrics.h"
#include "proxy/client/upstream_dialer.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"

namespace epochgate::proxy {

using metrics::Direction;
using metrics::Side;

namespace {


// Input growth step while a frame is incomplete (bytes).
constexpr size_t kFrameGrowStep = 256 * 1024;

// A scanned frame's payload size (size prefix excluded), complete or not.
size_t payload_size(const codec::FrameScan& s) {
  return s.kind == codec::FrameScan::Kind::kNeedMore ? (s.size > 4 ? s.size - 4 : 0) : s.size;
}

}  // namespace

Session::Session(WorkerContext& ctx, SessionList& list, int32_t node_id,
                 std::unique_ptr<Transport> client)
    : ctx_(ctx),
      list_(list),
      node_id_(node_id),
      client_(std::move(client), ctx.pool, *this),
      dialer_(ctx.make_dialer
                  ? ctx.make_dialer(static_cast<DialerOwner&>(*this))
                  : std::make_unique<UpstreamDialer>(ctx.loop, ctx.pool,
                                                     static_cast<DialerOwner&>(*this), ctx.tls)),
      flow_(ctx, client_, partial_, node_id),
      requests_(ctx, node_id, client_, in_flight_, sasl_, bridging_, *this),
      request_stream_(ctx, client_, requests_, *this),
      responses_(ctx, node_id, client_, in_flight_, sasl_, bridging_, upstream_name_, *this) {
  for (uv_timer_t* t : {&address_timer_, &hold_timer_, &write_deadline_timer_}) {
    uv_timer_init(ctx.loop, t);
    t->data = this;
  }
  list_.add(this);
  client_.set_budget(ctx.budget, true);
  client_.set_pacer(ctx.pacer);
  last_activity_ns_ = now_ns();
  const auto& lim = ctx_.config->limits;
  client_.set_watermarks(lim.low_watermark_bytes, lim.high_watermark_bytes);
}

Session::~Session() = default;

const char* Session::state_name(State s) {
  switch (s) {
    case State::kCreated: return "created";
    case State::kAwaitingAddress: return "awaiting_address";
    case State::kDialing: return "dialing";
    case State::kOpen: return "open";
    case State::kClosing: return "closing";
  }
  return "?";
}

const char* Session::intake_name(Intake i) {
  switch (i) {
    case Intake::kFlowing: return "flowing";
    case Intake::kHeld: return "held";
    case Intake::kClosingAfterWrite: return "closing_after_write";
  }
  return "?";
}

void Session::start() {
  if (state_ != State::kCreated) return;
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
    state_ = State::kAwaitingAddress;
    waiting_for_node_since_ns_ = now_ns();
    uv_timer_start(&address_timer_, &Session::on_address_timer, 100, 0);
    return;
  }
  dial();
}

void Session::close_once_upstream_written(CloseReason reason) {
  if (!open_for_requests()) return;
  client_.stop_reading();
  upstream_->flush();
  if (upstream_->queued_bytes() == 0) {
    close(reason);
    return;
  }
  // Nothing more is read from the client; responses to its earlier requests
  // still flow. Bounded: a broker that stops reading cannot keep it open.
  intake_ = Intake::kClosingAfterWrite;
  close_after_write_reason_ = reason;
  upstream_->notify_when_written();
  uv_timer_stop(&hold_timer_);
  uv_timer_start(&write_deadline_timer_, &Session::on_write_deadline_timer,
                 ctx_.config->limits.upstream_connect_timeout_ms, 0);
}

void Session::on_write_deadline_timer(uv_timer_t* t) {
  auto* s = static_cast<Session*>(t->data);
  if (s->state_ == State::kOpen && s->intake_ == Intake::kClosingAfterWrite)
    s->close(s->close_after_write_reason_);
  else if (s->eof_deadline_ns_ != 0)
    s->on_eof_timer();
}

void Session::on_eof_timer() {
  if (now_ns() < eof_deadline_ns_) {
    // A whole request no event offered (reads never restart after the end
    // of stream, and a pause can end without a read): offer it now.
    if (client_eof_ && finish_if_done()) return;
    offer_after_eof();
    if (state_ == State::kClosing) return;
    arm_eof_timer();
    return;
  }
  // What it sent was not all answered in time.
  spdlog::info(
      "client {}: closing {} ms (drain_timeout_ms) after its end of stream with answers owed "
      "(state {}, {} in flight, held {}, streaming {}, whole request waiting {}, {} bytes to "
      "write{})",
      client_.peer(), ctx_.config->drain_timeout_ms, state_name(state_), in_flight_.size(),
      requests_.holds_request(), request_stream_.active(), complete_frame_waiting(),
      client_.queued_bytes(), upstream_shut_ ? "; waiting for the broker's end of stream" : "");
  close(CloseReason::kClientClosed);
}

void Session::arm_eof_timer() {
  const uint64_t now = now_ns();
  const uint64_t left_ms = now >= eof_deadline_ns_ ? 0 : (eof_deadline_ns_ - now) / 1000000 + 1;
  // While a whole request waits on an open session, look again soon;
  // otherwise (dialing: the dial's completion offers it, and then arms this
  // again) only the bound.
  const uint64_t next_ms =
      eof_offer_pending() ? std::min<uint64_t>(kEofOfferIntervalMs, left_ms) : left_ms;
  uv_timer_start(&write_deadline_timer_, &Session::on_write_deadline_timer, next_ms, 0);
}

void Session::close(CloseReason reason) {
  if (state_ == State::kClosing) return;
  const State was = state_;
  state_ = State::kClosing;
  if (spdlog::should_log(spdlog::level::debug))
    spdlog::debug("client {} node {}: connection closed: {}", client_.peer(), node_id_,
                  metrics::close_reason_name(reason));
  own_derivation_.reset();  // a pending SCRAM derivation's answer finds nobody
  if (counter_) counter_->fetch_sub(1);
  count_client_login(sasl_.on_connection_closed());
  if (ctx_.metrics) {
    ctx_.metrics->connection_closed_reason(reason);
    // start() counted the client; on_dialed() the upstream.
    if (was != State::kCreated) ctx_.metrics->connection_closed(Side::kClient, node_id_);
    if (was == State::kOpen) ctx_.metrics->connection_closed(Side::kUpstream, node_id_);
  }
  client_.close();
  if (upstream_) upstream_->close();
  dialer_->close();
  for (uv_timer_t* t : {&address_timer_, &hold_timer_, &write_deadline_timer_}) {
    uv_timer_stop(t);
    uv_close(reinterpret_cast<uv_handle_t*>(t), &Session::on_timer_closed);
  }
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
  if (state_ != State::kClosing || open_handles_ > 0) return;
  list_.remove(this);
  delete this;
}

void Session::begin_drain() {
  if (draining_ || state_ == State::kClosing) return;
  draining_ = true;
  if (finish_if_done()) return;
  update_backpressure();
}

bool Session::finish_if_done() {
  if ((!draining_ && !client_eof_) || !owes_nothing()) return false;
  if (!draining_) {
    if (input_waiting()) return false;
    if (client_.queued_bytes() > 0) {
      client_.notify_when_written();  // on_drained() checks again
      return false;
    }
  }
  // What was accepted for the broker goes first: an acks=0 Produce is owed
  // no answer, but its bytes are.
  if (!upstream_written()) return false;
  if (!draining_ && state_ == State::kOpen && upstream_ && in_flight_.sent_without_response()) {
    // Requests that get no answer (Produce acks=0) may still be in the
    // broker's hands: the client's end of stream goes on to the broker, and
    // the broker's own ends the session. Closing first could reset a
    // connection still sending (a broker that answers acks=0 anyway), and a
    // reset drops what the broker has not processed. Bounded by the
    // end-of-stream timer.
    if (upstream_shut_) return false;
    upstream_shut_ = true;
    if (upstream_->transport().shutdown() == 0) return false;
  }
  close(draining_ ? CloseReason::kDrain : CloseReason::kClientClosed);
  return true;
}

bool Session::eof_offer_pending() const {
  return client_eof_ && open_for_requests() && input_waiting();
}

bool Session::input_waiting() const {
  // A streamed request's rest is not a frame head: it waits when its bytes
  // do (or only its end does).
  if (request_stream_.active())
    return !client_.input().empty() || request_stream_.complete();
  return complete_frame_waiting();
}

bool Session::stream_cut_short() const {
  return request_stream_.active() &&
         client_.input().size() < request_stream_.left();
}

void Session::offer_after_eof() {
  if (eof_offer_pending() && intake_ == Intake::kFlowing && !processing_client_ &&
      !flow_.budget_paused())
    process_client_input();
}

bool Session::upstream_written() {
  if (!upstream_ || upstream_->queued_bytes() == 0) return true;
  upstream_->notify_when_written();  // on_drained() checks again
  return false;
}

bool Session::complete_frame_waiting() const {
  const ByteBuffer& in = client_.input();
  return codec::scan_frame(in.begin(), in.size(), ctx_.config->limits.max_frame_bytes).kind ==
         codec::FrameScan::Kind::kFrame;
}

void Session::on_client_eof() {
  if (state_ == State::kClosing) return;
  client_eof_ = true;
  // Over TLS the end of stream ends the session (no half-close in TLS 1.2).
  // Part of a streamed request may have reached the broker: only closing is
  // honest. Nothing asked and nothing owed: nothing to answer. A drain
  // timeout of 0 answers nothing after a SIGTERM, nor after this.
  if (!answers_after_eof() || stream_cut_short() ||
      (owes_nothing() && !input_waiting() && !in_flight_.sent_without_response() &&
       upstream_written())) {
    close(CloseReason::kClientClosed);
    return;
  }
  // Bounded: a broker that never answers (or a dial that never completes)
  // cannot keep the session open. A FIN seen earlier, while reads were
  // paused (close_if_client_gone()), started the bound then.
  if (eof_deadline_ns_ == 0)
    eof_deadline_ns_ = now_ns() + uint64_t{ctx_.config->drain_timeout_ms} * 1000000;
  // While dialing, the dial's completion offers the waiting request.
  if (state_ == State::kOpen) {
    process_client_input();
    if (state_ != State::kOpen || finish_if_done()) return;
  }
  arm_eof_timer();
}

bool Session::close_if_client_gone() {
  if (state_ == State::kClosing || client_.reading() || !client_.peer_closed()) return false;
  // A reset: nothing written reaches the client, half-closed before or not.
  if (client_.peer_reset()) {
    close(CloseReason::kClientClosed);
    return true;
  }
  if (client_eof_) return false;
  // A FIN behind reads paused (in flight at the limit, a full queue to the
  // broker, the budget): a half-close as far as epochgate can tell, and
  // what waits unread before it is still answered once reads resume, as
  // after a FIN that was read; the drain bound starts now.
  if (answers_after_eof()) {
    if (eof_deadline_ns_ == 0) {
      eof_deadline_ns_ = now_ns() + uint64_t{ctx_.config->drain_timeout_ms} * 1000000;
      arm_eof_timer();
    }
    return false;
  }
  close(CloseReason::kClientClosed);
  return true;
}

bool Session::answers_after_eof() const {
  return client_.transport().writes_after_peer_eof() && ctx_.config->drain_timeout_ms > 0 &&
         intake_ != Intake::kClosingAfterWrite;
}

void Session::frame_error(CloseReason reason, const std::string& detail) {
  if (ctx_.metrics) ctx_.metrics->frame_error(reason);
  EPOCHGATE_PROXY_LOG(warn, "frame_error", "client {} node {}: closing connection: {}: {}",
                      client_.peer(), node_id_, metrics::close_reason_name(reason), detail);
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
    frame_error(metrics::close_reason(s.error), "request frame size prefix");
    return;
  }
  if (pre_auth_refused(payload_size(s))) return;
  if (s.kind == codec::FrameScan::Kind::kNeedMore) {
    // Timed from its first bytes, a bare size prefix too.
    if (!partial_.timing()) partial_.frame_started(now_ns());
    if (pre_auth_header_missing(payload_size(s))) return;
    client_.reserve_input(s.size, kFrameGrowStep);
    return;
  }
  // A whole request: nothing more is needed until the upstream has answered
  // and the request can be decided and forwarded. Reading goes on while the
  // buffer the request was read into has room (a read never grows it then,
  // Connection::on_transport_alloc), so a client that leaves right behind
  // its request is seen at once: after a RST (as clients that gave up send)
  // everything its session holds is freed, instead of when the broker has
  // answered the dial; after a FIN, which may be a half-close, the request
  // is answered first (on_client_eof()). Past that room reading stops.
  partial_.frame_done();
  if (in.tail_room() < ctx_.pool.block_size() / 4) client_.stop_reading();
}

PreAuthCap Session::pre_auth_cap(size_t size) {
  const ByteBuffer& in = client_.input();
  const auto& sasl = ctx_.config->upstream_sasl;
  // epochgate logging in for itself (not for its clients) means the
  // brokers' listener authenticates every client by SASL.
  const bool must_authenticate = sasl.enabled() && !sasl.on_behalf_of_clients;
  const size_t have = in.size() > 4 ? in.size() - 4 : 0;
  return sasl_.pre_auth_cap(in.begin() + 4, have, size, must_authenticate);
}

bool Session::pre_auth_refused(size_t size) {
  if (pre_auth_cap(size) != PreAuthCap::kCapped) return false;
  frame_error(CloseReason::kPreAuthFrameTooLarge,
              "a frame of " + std::to_string(size) + " bytes before authentication (at most " +
                  std::to_string(kPreAuthMaxFrameBytes) + ")");
  return true;
}

bool Session::pre_auth_header_missing(size_t size) {
  // Without its API key a large frame gets no buffer of its size yet: the
  // next read (a pool block) brings the key.
  return pre_auth_cap(size) == PreAuthCap::kNeedHeader;
}

void Session::process_client_input() {
  if (state_ == State::kAwaitingAddress || state_ == State::kDialing) {
    check_held_client_input();
    return;
  }
  if (processing_client_) return;  // re-entered from update_backpressure()
  processing_client_ = true;
  request_stream_.forget_wait();
  bool stream_ended = false;
  ByteBuffer& in = client_.input();
  const auto& lim = ctx_.config->limits;
  uint64_t before = upstream_ ? upstream_->bytes_accepted() : 0;
  if (int err = request_stream_.take_splice_error(); err != 0 && upstream_) {
    processing_client_ = false;
    on_write_error(*upstream_, err);  // a splice to the broker's socket failed
    return;
  }
  // Draining, only a request held before the drain is offered again; a
  // request streaming upstream is always read to its end.
  while (state_ == State::kOpen && intake_ == Intake::kFlowing &&
         (request_stream_.active() ||
          (!in.empty() && (!draining_ || requests_.holds_request()) &&
           !sasl_.holds_client_input() && !own_login_))) {
    if (request_stream_.active()) {
      // A large Produce goes upstream as it arrives (proxy/session/request_stream.h).
      if (in.empty() && !request_stream_.complete()) break;
      RequestStream::Step step = request_stream_.relay(in);
      if (step == RequestStream::Step::kClosed) {
        processing_client_ = false;
        return;
      }
      if (step == RequestStream::Step::kMore) break;
      partial_.frame_done();
      stream_ended = true;
      continue;
    }
    if (in_flight_.size() >= lim.max_in_flight_per_connection) break;
    if (own_relogin_at_ns_ != 0 && now_ns() >= own_relogin_at_ns_) {
      // KIP-368: log in again before the broker's session ends, once the
      // broker has answered everything before (responses stay in order).
      if (in_flight_.upstream_pending() == 0) {
        const uint64_t login_from = upstream_->bytes_accepted();
        start_own_login();
        before += upstream_->bytes_accepted() - login_from;  // epochgate's own bytes
      }
      break;
    }
    codec::FrameScan s = codec::scan_frame(in.begin(), in.size(), lim.max_frame_bytes);
    if (s.kind == codec::FrameScan::Kind::kError) {
      processing_client_ = false;
      frame_error(metrics::close_reason(s.error), "request frame size prefix");
      return;
    }
    if (pre_auth_refused(payload_size(s))) {
      processing_client_ = false;
      return;
    }
    if (s.kind == codec::FrameScan::Kind::kNeedMore) {
      // Timed from its first bytes: a large frame's bare size prefix (no
      // API key yet) too, or a client could hold its connection with 4 bytes.
      if (!partial_.timing()) partial_.frame_started(now_ns());
      if (pre_auth_header_missing(payload_size(s))) break;
      // Streamed, the frame never needs a buffer of its own size.
      if (request_stream_.try_begin(in, s.size)) {
        client_.clear_pending_frame();
        continue;
      }
      if (request_stream_.closed()) {
        processing_client_ = false;
        return;
      }
      if (request_stream_.waits_for_upstream()) break;  // streams once the upstream's queue is out
      // Room for the next part of the frame, not all of it: a peer announcing
      // a large frame gets memory as its bytes arrive (buffer budget).
      client_.reserve_input(s.size, kFrameGrowStep);
      break;
    }
    partial_.frame_done();
    RequestPath::Step step = requests_.handle(in.mutable_begin() + 4, s.size);
    if (step == RequestPath::Step::kClosed) {
      processing_client_ = false;
      return;
    }
    if (step == RequestPath::Step::kHold) break;
    if (in.size() >= 4 + s.size) in.consume(4 + s.size);  // else it went upstream whole
    client_.clear_pending_frame();
    client_.set_first_read_bytes(0);  // read whole: the next is not expected to stream
  }
  // A streamed request reads at most its own bytes (the next frame waits).
  if (state_ == State::kOpen && request_stream_.active())
    client_.reserve_input(in.size() + std::min(request_stream_.left(), Connection::kMaxReadBytes),
                          kFrameGrowStep);
  if (in.empty() && !request_stream_.active()) {
    partial_.frame_done();
    client_.release_idle_input();
    // The next request's first read takes a head, not records: a cap, no buffer held idle.
    if (stream_ended && state_ == State::kOpen)
      client_.set_first_read_bytes(RequestStream::kHeadReadBytes);
  }
  const uint64_t forwarded_bytes = upstream_ ? upstream_->bytes_accepted() - before : 0;
  if (ctx_.metrics && forwarded_bytes) ctx_.metrics->bytes(Direction::kClientToUpstream, forwarded_bytes);
  processing_client_ = false;
  if (state_ != State::kOpen) return;
  upstream_->flush();
  responses_.flush_ready();
  client_.flush();
  if (finish_if_done()) return;  // a held request epochgate answered itself was written
  update_backpressure();
}

// ---- upstream -> client -----------------------------------------------------

ssize_t Session::take_read_turn(Connection& c) {
  // Only a streamed request's or response's record bytes.
  if (state_ != State::kOpen || own_login_) return 0;
  if (&c == &client_) return request_stream_.take_read_turn();
  if (&c != upstream_.get()) return 0;
  return responses_.take_read_turn(c);
}

void Session::process_upstream_input() {
  ByteBuffer& in = upstream_->input();
  const auto& lim = ctx_.config->limits;
  uint64_t delivered = client_.bytes_accepted();
  if (int err = responses_.take_splice_error(); err != 0) {
    on_write_error(client_, err);  // a splice to the client's socket failed
    return;
  }
  // A response whose records were spliced to its last byte still ends here.
  while (state_ == State::kOpen && (!in.empty() || responses_.stream_complete())) {
    if (responses_.streaming()) {
      // A large Fetch response goes out as it arrives (proxy/session/response_stream.h).
      ResponseStream::Step step = responses_.relay_stream(in);
      if (step == ResponseStream::Step::kClosed) return;
      if (step == ResponseStream::Step::kDone) {
        upstream_->clear_pending_frame();
        continue;
      }
      break;
    }
    codec::FrameScan s = codec::scan_frame(in.begin(), in.size(), lim.max_frame_bytes);
    if (s.kind == codec::FrameScan::Kind::kError) {
      frame_error(metrics::close_reason(s.error), "response frame size prefix from " + upstream_name_);
      return;
    }
    if (s.kind == codec::FrameScan::Kind::kNeedMore) {
      // Streamed, the frame never needs a buffer of its own size.
      if (!own_login_ && responses_.try_stream(in, s.size)) continue;
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
    if (!responses_.handle(in.begin() + 4, s.size)) return;
    in.consume(4 + s.size);
    upstream_->clear_pending_frame();
    if (own_relogin_at_ns_ != 0 && in_flight_.upstream_pending() == 0)
      sasl_resume_client_ = true;  // a re-login may have waited for this answer
  }
  // A streamed frame keeps its read buffer until it ends, with room for up
  // to one read of what is still to come (a small one where the records
  // after it could be spliced), also after a turn that spliced.
  if (state_ == State::kOpen && responses_.streaming())
    upstream_->reserve_input(
        in.size() + std::min(responses_.stream_left(), responses_.stream_read_bytes(*upstream_)),
        kFrameGrowStep);
  if (in.empty() && !responses_.streaming()) upstream_->release_idle_input();
  upstream_->set_first_read_bytes(responses_.first_read_bytes(*upstream_));
  if (state_ != State::kOpen) return;
  if (sasl_resume_client_) {
    // Client frames held behind a SASL answer can be read now.
    sasl_resume_client_ = false;
    if (!sasl_.holds_client_input() && !own_login_ && !client_.input().empty()) {
      process_client_input();
      if (state_ != State::kOpen) return;
    }
  }
  responses_.flush_ready();
  uint64_t after = client_.bytes_accepted();
  if (ctx_.metrics && after > delivered) ctx_.metrics->bytes(Direction::kUpstreamToClient, after - delivered);
  client_.flush();
  // Requests read before the client's end of stream that waited for room in
  // flight: nothing restarts reading for them.
  if (client_eof_) {
    offer_after_eof();
    if (state_ != State::kOpen) return;
  }
  if (finish_if_done()) return;
  update_backpressure();
}

// ---- backpressure and errors ------------------------------------------------

void Session::update_backpressure() {
  if (!open_for_requests()) return;
  if (flow_.update_client(draining_, in_flight_.size(), request_stream_.active(),
                          request_stream_.splicing() || request_stream_.waits_for_upstream()))
    process_client_input();
  if (state_ != State::kOpen) return;
  flow_.update_upstream(responses_.streaming());
}

void Session::on_drained(Connection& c) {
  if (intake_ == Intake::kClosingAfterWrite) {
    if (&c == upstream_.get() && upstream_->queued_bytes() == 0) close(close_after_write_reason_);
    return;
  }
  if ((client_eof_ || draining_) && state_ == State::kOpen && finish_if_done()) return;
  if (client_eof_) {
    // A streamed request's rest, or requests behind it, waited for this room.
    offer_after_eof();
    if (state_ != State::kOpen) return;
  }
  update_backpressure();
}

void Session::on_read_error(Connection& c, int status) {
  if (status == UV_ENOBUFS) {
    // Over the buffer budget with a full buffer: wait for the budget.
    flow_.on_no_buffers(&c == &client_);
    return;
  }
  if (&c == &client_) {
    if (status == UV_EOF) {
      on_client_eof();
      return;
    }
    spdlog::debug("client {}: read error: {}", c.peer(), uv_strerror(status));
    close(CloseReason::kClientError);
    return;
  }
  if (&c != upstream_.get()) return;
  if (upstream_shut_) {
    // The broker's answer to the client's end of stream, passed on.
    close(CloseReason::kClientClosed);
    return;
  }
  EPOCHGATE_PROXY_LOG(info, "upstream_closed",
                      "upstream {} (node {}) closed the connection{}{}; closing client {}",
                      upstream_name_, node_id_, status == UV_EOF ? "" : ": ",
                      status == UV_EOF ? "" : uv_strerror(status), client_.peer());
  close(status == UV_EOF ? CloseReason::kUpstreamClosed : CloseReason::kUpstreamError);
}

void Session::on_write_error(Connection& c, int status) {
  spdlog::debug("{} write error: {}", &c == &client_ ? "client" : "upstream", uv_strerror(status));
  close(&c == &client_ ? CloseReason::kClientError : CloseReason::kUpstreamError);
}

}  // namespace epochgate::proxy
