// proxy/client/upstream_dialer.cc
#include "proxy/client/upstream_dialer.h"

#include <algorithm>

#include "codec/api_table.h"
#include "codec/frame_splitter.h"
#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/api_versions_request.h"
#include "codec/messages/api_versions_response.h"
#include "proxy/net/clock.h"
#include "proxy/net/tcp_transport.h"
#include "proxy/tls/tls_wrap.h"

namespace epochgate::proxy {

namespace {
// An ApiVersions v0 answer lists each API in 6 bytes; no broker's comes near this.
constexpr size_t kMaxProbeAnswerBytes = 64 * 1024;

}  // namespace

struct UpstreamDialer::ResolveReq {
  uv_getaddrinfo_t req;
  UpstreamDialer* dialer;  // nullptr: abandoned, frees itself when called back
};

struct UpstreamDialer::Attempt {
  Stage stage = Stage::kResolve;
  uint64_t started_ms = 0;
  ResolveReq* resolve = nullptr;
  std::unique_ptr<Connection> conn;
  TcpTransport* tcp = nullptr;  // conn's transport, for the connect
  tls::TlsTransport* tls = nullptr;  // over tcp when upstream_tls is on
};

const char* UpstreamDialer::stage_name(Stage s) {
  switch (s) {
    case Stage::kResolve:
      return "resolve";
    case Stage::kConnect:
      return "connect";
    case Stage::kTls:
      return "tls";
    case Stage::kAnswer:
      return "answer";
  }
  return "?";
}

UpstreamDialer::UpstreamDialer(uv_loop_t* loop, BufferPool& pool, Owner& owner,
                               tls::TlsServices tls)
    : loop_(loop), pool_(pool), owner_(owner), tls_(tls) {
  uv_timer_init(loop_, &timer_);
  timer_.data = this;
}

UpstreamDialer::~UpstreamDialer() {
  for (ResolveReq* r : resolving_) r->dialer = nullptr;
}

void UpstreamDialer::dial(std::vector<config::HostPort> targets, uint32_t timeout_ms,
                          std::string client_id) {
  if (closed_) return;
  cancel();
  targets_ = std::move(targets);
  timeout_ms_ = timeout_ms;
  client_id_ = std::move(client_id);
  index_ = 0;
  start_target();
}

void UpstreamDialer::cancel() {
  ++generation_;
  if (attempt_) drop_attempt();
}

void UpstreamDialer::close() {
  if (closed_) return;
  cancel();
  closed_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), [](uv_handle_t* h) {
    auto* d = static_cast<UpstreamDialer*>(h->data);
    d->timer_closed_ = true;
    d->maybe_closed();
  });
}

void UpstreamDialer::maybe_closed() {
  if (!closed_ || !timer_closed_ || !closing_.empty() || reported_closed_) return;
  reported_closed_ = true;
  owner_.on_dialer_closed();
}

void UpstreamDialer::start_target() {
  if (closed_) return;
  if (index_ >= targets_.size()) {
    owner_.on_dial_failed();
    return;
  }
  attempt_ = std::make_unique<Attempt>();
  attempt_->started_ms = now_ms();
  uv_timer_start(&timer_, &UpstreamDialer::on_timeout, timeout_ms_, 0);
  const config::HostPort& t = targets_[index_];
  auto* rr = new ResolveReq{};
  rr->req.data = rr;
  rr->dialer = this;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string port = std::to_string(t.port);
  int rc = uv_getaddrinfo(loop_, &rr->req, &UpstreamDialer::on_resolved, t.host.c_str(),
                          port.c_str(), &hints);
  if (rc != 0) {
    delete rr;
    attempt_failed(Stage::kResolve, rc);
    return;
  }
  attempt_->resolve = rr;
  resolving_.push_back(rr);
}

void UpstreamDialer::on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res) {
  auto* rr = static_cast<ResolveReq*>(req->data);
  UpstreamDialer* d = rr->dialer;
  if (d != nullptr)
    d->resolving_.erase(std::remove(d->resolving_.begin(), d->resolving_.end(), rr),
                        d->resolving_.end());
  delete rr;
  if (d == nullptr) {  // given up on (timeout, cancel) or the dialer is gone
    if (res) uv_freeaddrinfo(res);
    return;
  }
  d->attempt_->resolve = nullptr;
  if (status != 0 || res == nullptr) {
    if (res) uv_freeaddrinfo(res);
    d->attempt_failed(Stage::kResolve, status != 0 ? status : UV_EAI_NONAME);
    return;
  }
  d->attempt_->stage = Stage::kConnect;
  auto tcp = std::make_unique<TcpTransport>(d->loop_);
  d->attempt_->tcp = tcp.get();
  // A caller's wrapper (KafkaClientOptions::transport) wins; otherwise
  // upstream_tls, when on, wraps the socket for the target's host.
  std::unique_ptr<Transport> stream =
      d->wrap_ ? d->wrap_(std::move(tcp), d->targets_[d->index_])
               : tls::wrap_upstream(d->loop_, d->tls_, std::move(tcp), d->targets_[d->index_].host,
                                    &d->attempt_->tls);
  d->attempt_->conn = std::make_unique<Connection>(std::move(stream), d->pool_, *d);
  // One request per attempt: a given-up attempt's callback still arrives
  // (UV_ECANCELED) when its socket closes, after the next one started.
  auto* cr = new uv_connect_t;
  cr->data = d;
  int rc = uv_tcp_connect(cr, d->attempt_->tcp->handle(), res->ai_addr, &UpstreamDialer::on_connected);
  uv_freeaddrinfo(res);
  if (rc != 0) {
    delete cr;
    d->attempt_failed(Stage::kConnect, rc);
  }
}

void UpstreamDialer::on_connected(uv_connect_t* req, int status) {
  auto* d = static_cast<UpstreamDialer*>(req->data);
  bool current = d->attempt_ && d->attempt_->conn &&
                 req->handle == reinterpret_cast<uv_stream_t*>(d->attempt_->tcp->handle());
  delete req;
  if (!current) return;
  if (status != 0) {
    d->attempt_failed(Stage::kConnect, status);
    return;
  }
  d->attempt_->tcp->connected();
  if (!d->probe_) {
    // With upstream_tls the handshake runs under the owner's first write.
    d->hand_over(ApiVersionRanges{});
    return;
  }
  d->attempt_->stage = Stage::kAnswer;
  d->attempt_->conn->start_reading();
  d->send_probe();
}

void UpstreamDialer::hand_over(const ApiVersionRanges& versions) {
  attempt_->conn->stop_reading();
  uv_timer_stop(&timer_);
  std::unique_ptr<Connection> conn = std::move(attempt_->conn);
  attempt_.reset();
  owner_.on_dialed(std::move(conn), index_, versions);
}

void UpstreamDialer::send_probe() {
  codec::RequestHeader h;
  h.api_key = codec::kApiVersions;
  h.api_version = 0;
  h.correlation_id = kProbeCorrelationId;
  h.client_id = client_id_;
  std::vector<uint8_t> frame;
  codec::encode_frame(frame, h, codec::ApiVersionsRequest{}, 0);
  attempt_->conn->queue(frame.data(), frame.size());
  attempt_->conn->flush();
}

void UpstreamDialer::on_readable(Connection& c) {
  if (!attempt_ || attempt_->conn.get() != &c) return;
  ByteBuffer& in = c.input();
  codec::FrameScan s = codec::scan_frame(in.begin(), in.size(), kMaxProbeAnswerBytes);
  if (s.kind == codec::FrameScan::Kind::kError) {
    attempt_failed(Stage::kAnswer, 0);
    return;
  }
  if (s.kind == codec::FrameScan::Kind::kNeedMore) {
    c.reserve_input(s.size, s.size);
    return;
  }
  const uint8_t* frame = in.begin() + 4;
  codec::ResponseHeader rh;
  codec::Status st = codec::parse_response_header(
      frame, s.size, codec::response_header_version(codec::kApiVersions, 0), rh);
  codec::ApiVersionsResponse r;
  codec::Bytes trailing;
  if (st.ok() && rh.correlation_id == kProbeCorrelationId)
    st = codec::decode_body_allow_trailing(frame + rh.size, s.size - rh.size, 0, r, trailing);
  if (!st.ok() || rh.correlation_id != kProbeCorrelationId) {
    attempt_failed(Stage::kAnswer, 0);  // not a Kafka broker's answer
    return;
  }
  // Any answer counts, an error code included: the broker reads and answers.
  ApiVersionRanges versions;
  for (const auto& k : r.api_keys) versions.set(k.api_key, k.min_version, k.max_version);
  in.consume(4 + s.size);
  c.clear_pending_frame();
  hand_over(versions);
}

void UpstreamDialer::on_read_error(Connection& c, int status) {
  if (!attempt_ || attempt_->conn.get() != &c) return;
  attempt_failed(attempt_->tls && !attempt_->tls->ready() ? Stage::kTls : Stage::kAnswer, status);
}

void UpstreamDialer::on_write_error(Connection& c, int status) {
  if (!attempt_ || attempt_->conn.get() != &c) return;
  attempt_failed(attempt_->stage, status);
}

void UpstreamDialer::on_timeout(uv_timer_t* t) {
  auto* d = static_cast<UpstreamDialer*>(t->data);
  if (!d->attempt_) return;
  if (d->attempt_->tls && !d->attempt_->tls->ready() && d->attempt_->stage == Stage::kAnswer) {
    // Counted and logged as a TLS timeout; the attempt ends here, which
    // closes the transport before its deferred callback would run.
    d->attempt_->tls->time_out(d->timeout_ms_);
    d->attempt_failed(Stage::kTls, UV_ETIMEDOUT);
    return;
  }
  d->attempt_failed(d->attempt_->stage, UV_ETIMEDOUT);
}

void UpstreamDialer::attempt_failed(Stage stage, int status) {
  Failure f;
  f.index = index_;
  f.target = targets_[index_];
  f.stage = stage;
  f.status = status;
  f.elapsed_ms = attempt_ ? now_ms() - attempt_->started_ms : 0;
  drop_attempt();
  uint64_t gen = generation_;
  owner_.on_dial_attempt_failed(f);
  if (gen != generation_ || closed_) return;  // the owner cancelled or re-dialed
  ++index_;
  start_target();
}

void UpstreamDialer::drop_attempt() {
  uv_timer_stop(&timer_);
  if (!attempt_) return;
  if (ResolveReq* rr = attempt_->resolve) {
    rr->dialer = nullptr;
    uv_cancel(reinterpret_cast<uv_req_t*>(&rr->req));
    resolving_.erase(std::remove(resolving_.begin(), resolving_.end(), rr), resolving_.end());
  }
  if (attempt_->conn) {
    attempt_->conn->close();
    closing_.push_back(std::move(attempt_->conn));
  }
  attempt_.reset();
}

void UpstreamDialer::on_closed(Connection& c) {
  for (auto it = closing_.begin(); it != closing_.end(); ++it) {
    if (it->get() == &c) {
      closing_.erase(it);
      break;
    }
  }
  maybe_closed();
}

}  // namespace epochgate::proxy
