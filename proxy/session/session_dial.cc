// proxy/session/session_dial.cc: the session's upstream connection: the
// dial (one bootstrap broker after another), its timeout, holding the
// client's first requests meanwhile, and the failure that ends the session.
#include "proxy/session/session.h"

#include <spdlog/spdlog.h>

#include "metrics/proxy_metrics.h"
#include "proxy/client/upstream_dialer.h"
#include "proxy/client/warm_upstreams.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"

namespace epochgate::proxy {

using metrics::Side;

void Session::dial() {
  state_ = State::kDialing;
  upstream_name_ = targets_.front().to_string();
  // The client's requests stay unread (in its socket) until the broker has
  // answered epochgate's own ApiVersions: nothing of the client's is sent to
  // a broker that might never answer, and no correlation id is shared.
  // Except when clients log in to the brokers with SASL themselves: a
  // broker's SASL listener takes one ApiVersions before SaslHandshake and
  // closes the connection at a second, so the client's own must be the first.
  const bool probe = !ctx_.upstreams->clients_log_in_upstream();
  // A connection the worker dialled and probed ahead went through the same
  // steps as the dial below, only earlier: the client's first request goes
  // up without waiting for them (a consumer's first connection to a new
  // leader's listener, right after a move).
  if (probe && node_id_ >= 0 && ctx_.warm != nullptr) {
    if (std::unique_ptr<Connection> conn = ctx_.warm->take(node_id_, targets_.front())) {
      spdlog::debug("session {} on node {} listener: upstream {} taken ready from the warm pool",
                    client_.peer(), node_id_, upstream_name_);
      on_dialed(std::move(conn), 0, ApiVersionRanges{});
      return;
    }
  }
  dialer_->set_probe(probe);
  dialer_->dial(targets_, ctx_.config->limits.upstream_connect_timeout_ms, "epochgate");
}

void Session::on_dial_attempt_failed(const DialFailure& f) {
  upstream_name_ = f.target.to_string();
  if (ctx_.metrics) ctx_.metrics->upstream_connect_failure(node_id_);
  if (f.stage == DialStage::kAnswer) {
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
  EPOCHGATE_PROXY_LOG(warn, f.stage == DialStage::kResolve ? "upstream_resolve"
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
  flow_.attach_upstream(*upstream_);
  requests_.attach_upstream(*upstream_);
  request_stream_.attach_upstream(*upstream_);
  state_ = State::kOpen;
  if (ctx_.metrics) ctx_.metrics->connection_opened(Side::kUpstream, node_id_);
  spdlog::debug("session {} -> {} (node {}) open", client_.peer(), upstream_name_, node_id_);
  if (logs_in_for_client()) {
    start_own_login();
    if (state_ != State::kOpen) return;
  }
  update_backpressure();
  // Requests read while dialing: update_backpressure() offers them only when
  // it restarts reading, and reading may have gone on (check_held_client_input).
  // Over the buffer budget they wait, like any input, for the budget's
  // re-check, which offers them when it restarts reading.
  if (state_ == State::kOpen && !flow_.budget_paused() && !client_.input().empty())
    process_client_input();
  if (state_ == State::kOpen && !upstream_->input().empty()) process_upstream_input();
  // After the client's end of stream: what waits is now looked at again soon.
  if (state_ == State::kOpen && eof_deadline_ns_ != 0) arm_eof_timer();
}

void Session::hold_request() {
  if (!open_for_requests()) return;
  intake_ = Intake::kHeld;
  uv_timer_start(&hold_timer_, &Session::on_hold_timer, 20, 0);
}

void Session::on_dial_failed() { connect_failed("no reachable upstream", 0); }

void Session::on_dialer_closed() {
  // Its last callback: nothing of it runs after this returns.
  dialer_.reset();
  --open_handles_;
  maybe_free();
}

void Session::on_address_timer(uv_timer_t* t) {
  auto* s = static_cast<Session*>(t->data);
  if (s->state_ != State::kAwaitingAddress) return;
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
  uv_timer_start(&s->address_timer_, &Session::on_address_timer, 100, 0);
}

void Session::on_hold_timer(uv_timer_t* t) {
  auto* s = static_cast<Session*>(t->data);
  if (s->state_ != State::kOpen || s->intake_ != Intake::kHeld) return;
  s->intake_ = Intake::kFlowing;
  s->process_client_input();
}

void Session::connect_failed(const char* why, int status) {
  EPOCHGATE_PROXY_LOG(warn, "upstream_unreachable",
                      "client {} on node {} listener: closing, upstream {}: {}{}{}",
                      client_.peer(), node_id_, upstream_name_.empty() ? "?" : upstream_name_,
                      why, status ? ": " : "", status ? uv_strerror(status) : "");
  close(CloseReason::kUpstreamUnreachable);
}

}  // namespace epochgate::proxy
