// proxy/client/kafka_client.cc
#include "proxy/client/kafka_client.h"

#include <algorithm>
#include <climits>

#include "codec/frame_splitter.h"
#include "codec/header.h"
#include "proxy/net/clock.h"

namespace epochgate::proxy {

KafkaClient::KafkaClient(uv_loop_t* loop, BufferPool& pool, KafkaClientOptions options,
                         KafkaClientObserver* observer)
    : KafkaClient(
          loop,
          [this, loop, &pool](DialerOwner& owner) {
            auto d = std::make_unique<UpstreamDialer>(loop, pool, owner);
            upstream_dialer_ = d.get();
            return d;
          },
          std::move(options), observer) {}

KafkaClient::KafkaClient(uv_loop_t* loop, const MakeDialer& make_dialer,
                         KafkaClientOptions options, KafkaClientObserver* observer)
    : loop_(loop), options_(std::move(options)), observer_(observer), dialer_(make_dialer(*this)) {
  uv_timer_init(loop_, &timer_);
  timer_.data = this;
  uv_timer_init(loop_, &kick_);
  kick_.data = this;
}

KafkaClient::~KafkaClient() = default;

void KafkaClient::set_targets(std::vector<config::HostPort> targets) {
  options_.targets = std::move(targets);
}

std::string KafkaClient::peer_target() const {
  if (!conn_ || connected_index_ >= dialed_.size()) return "";
  return dialed_[connected_index_].to_string();
}

int32_t KafkaClient::next_correlation() {
  correlation_ = correlation_ >= INT32_MAX - 1 ? 1 : correlation_ + 1;
  return correlation_;
}

ClientError KafkaClient::submit(BrokerRequest req) {
  if (state_ == State::kClosed) return ClientError::kClosed;
  if (outstanding() >= options_.max_outstanding) return ClientError::kBusy;
  if ((state_ == State::kReady || state_ == State::kLoggingIn) &&
      versions_.pick(req.api_key, req.lo, req.hi) < 0)
    return ClientError::kUnsupportedVersion;
  Outgoing out(std::move(req));
  out.give_up_ms = out.deadline_ms ? now_ms() + out.deadline_ms : 0;
  bool bounded = out.give_up_ms != 0;
  waiting_.push_back(std::move(out));
  // The kick first: a deadline already due when the loop next runs (a
  // stalled machine, a 1 ms deadline) must not expire the request before
  // the dial it asked for has started. Timers due at once run in the order
  // they were started.
  kick();
  if (bounded) arm_timer();  // the whole wait, dialing included
  return ClientError::kNone;
}

void KafkaClient::connect() {
  if (state_ != State::kIdle) return;
  want_connect_ = true;
  kick();
}

void KafkaClient::kick() {
  if (state_ != State::kClosed) uv_timer_start(&kick_, &KafkaClient::on_kick, 0, 0);
}

void KafkaClient::on_kick(uv_timer_t* t) {
  auto* c = static_cast<KafkaClient*>(t->data);
  if (c->state_ == State::kReady) {
    c->pump();
    return;
  }
  if (c->state_ != State::kIdle || (c->waiting_.empty() && !c->want_connect_)) return;
  c->want_connect_ = false;
  if (c->options_.targets.empty()) {
    c->fail_all(ClientError::kConnectFailed, "no broker to connect to");
    return;
  }
  c->state_ = State::kDialing;
  c->dialed_ = c->options_.targets;
  c->dialer_->set_transport_wrapper(c->options_.transport);
  c->dialer_->dial(c->dialed_, c->options_.connect_timeout_ms, c->options_.client_id);
}

void KafkaClient::on_dial_attempt_failed(const DialFailure& f) {
  if (observer_) observer_->on_dial_attempt_failed(f);
}

void KafkaClient::on_dial_failed() {
  if (state_ != State::kDialing) return;
  fail_all(ClientError::kConnectFailed,
           "no broker reachable (" + std::to_string(dialed_.size()) + " tried)");
}

void KafkaClient::on_dialed(std::unique_ptr<Connection> conn, size_t index,
                            const ApiVersionRanges& versions) {
  conn->set_owner(*this);
  if (state_ != State::kDialing) {  // closed meanwhile: never leak a socket
    conn->close();
    closing_.push_back(std::move(conn));
    return;
  }
  conn_ = std::move(conn);
  conn_->start_reading();
  versions_ = versions;
  connected_index_ = index;
  logged_in_ = false;
  state_ = State::kReady;
  uint64_t gen = generation_;
  if (observer_) observer_->on_connected(index, versions_);
  if (gen != generation_ || state_ != State::kReady) return;
  if (options_.sasl.enabled()) {
    if (!versions_.offers(codec::kSaslHandshake)) {
      SaslLoginStep refused;
      refused.error = "the broker does not offer SaslHandshake (a plaintext listener?)";
      if (observer_) observer_->on_login(refused, false, false);
      if (gen == generation_) fail_all(ClientError::kLoginFailed, "no SaslHandshake");
      return;
    }
    start_login();
  } else {
    pump();
  }
  // Bytes the broker sent unasked after the probe's answer.
  if (gen == generation_ && conn_ && !conn_->input().empty()) on_readable(*conn_);
}

void KafkaClient::pump() {
  if (state_ != State::kReady || !conn_) return;
  uint64_t gen = generation_;
  uint64_t now = now_ms();
  bool queued = false;
  while (!waiting_.empty()) {
    if (relogin_at_ms_ && now >= relogin_at_ms_) {
      // Renew the login between requests: answers to it must not interleave.
      if (written_.empty()) {
        if (queued) conn_->flush();
        if (gen == generation_ && conn_) start_login();
        return;
      }
      break;
    }
    Outgoing o = std::move(waiting_.front());
    waiting_.pop_front();
    o.version = versions_.pick(o.api_key, o.lo, o.hi);
    if (o.version < 0) {
      BrokerAnswer a;
      a.error = ClientError::kUnsupportedVersion;
      const codec::ApiInfo* info = codec::api_info(o.api_key);
      a.detail = std::string(info ? info->name : "?") + " v" + std::to_string(o.lo) + "-" +
                 std::to_string(o.hi) + " not offered (broker v" +
                 std::to_string(versions_.min(o.api_key)) + "-" +
                 std::to_string(versions_.max(o.api_key)) + ")";
      finish(o, std::move(a));
      if (gen != generation_ || state_ != State::kReady) return;
      continue;
    }
    codec::RequestHeader h;
    h.api_key = o.api_key;
    h.api_version = o.version;
    h.correlation_id = o.correlation_id = next_correlation();
    h.client_id = o.client_id.empty() ? options_.client_id : o.client_id;
    std::vector<uint8_t> frame;
    o.encode(frame, h, o.version);
    conn_->queue(frame.data(), frame.size());
    queued = true;
    if (o.done) {
      o.answer_by_ms = now + o.timeout_ms;
      if (o.give_up_ms) o.answer_by_ms = std::min(o.answer_by_ms, o.give_up_ms);
      written_.push_back(std::move(o));
    } else {
      posted_.push_back(o.correlation_id);
      if (posted_.size() > kPostedKept) posted_.pop_front();
      if (o.written) posts_queued_.push_back(std::move(o.written));
    }
  }
  arm_timer();
  if (!queued) return;
  conn_->flush();
  if (gen != generation_ || !conn_ || posts_queued_.empty()) return;
  if (conn_->queued_bytes() == 0)
    report_posts_written(ClientError::kNone);
  else
    conn_->notify_when_written();
}

void KafkaClient::report_posts_written(ClientError e) {
  std::vector<std::function<void(ClientError)>> posts = std::move(posts_queued_);
  posts_queued_.clear();
  for (auto& w : posts) w(e);
}

void KafkaClient::on_drained(Connection& c) {
  if (&c != conn_.get() || posts_queued_.empty()) return;
  if (c.queued_bytes() == 0)
    report_posts_written(ClientError::kNone);
  else
    c.notify_when_written();
}

bool KafkaClient::take_posted(int32_t correlation_id) {
  auto it = std::find(posted_.begin(), posted_.end(), correlation_id);
  if (it == posted_.end()) return false;
  posted_.erase(it);
  return true;
}

void KafkaClient::finish(Outgoing& o, BrokerAnswer&& a) {
  if (!o.done) {
    if (o.written) {
      auto written = std::move(o.written);
      written(a.error);
    }
    return;
  }
  a.version = o.version;
  a.correlation_id = o.correlation_id;
  auto done = std::move(o.done);
  done(std::move(a));
}

void KafkaClient::on_readable(Connection& c) {
  if (&c != conn_.get()) return;
  uint64_t gen = generation_;
  ByteBuffer& in = c.input();
  while (!in.empty()) {
    codec::FrameScan s = codec::scan_frame(in.begin(), in.size(), options_.max_frame_bytes);
    if (s.kind == codec::FrameScan::Kind::kError) {
      fail_all(ClientError::kBadResponse, std::string("bad frame: ") + codec::errc_name(s.error));
      return;
    }
    if (s.kind == codec::FrameScan::Kind::kNeedMore) {
      c.reserve_input(s.size, s.size);
      return;
    }
    handle_frame(in.begin() + 4, s.size);
    if (gen != generation_) return;  // dropped: the bytes went with the connection
    in.consume(4 + s.size);
  }
  c.release_idle_input();
  if (state_ == State::kReady && !waiting_.empty())
    pump();
  else
    arm_timer();
}

void KafkaClient::handle_frame(const uint8_t* frame, size_t size) {
  // Every response header starts with the correlation id (v0 and v1).
  if (size >= 4 && !posted_.empty()) {
    int32_t cid = static_cast<int32_t>((uint32_t{frame[0]} << 24) | (uint32_t{frame[1]} << 16) |
                                       (uint32_t{frame[2]} << 8) | uint32_t{frame[3]});
    if (take_posted(cid)) {
      if (observer_) observer_->on_post_answered();
      return;
    }
  }
  if (state_ == State::kLoggingIn && login_ && written_.empty()) {
    login_deadline_ms_ = 0;
    apply_login_step(login_->on_response(frame, size, next_correlation()));
    return;
  }
  if (written_.empty()) {
    fail_all(ClientError::kBadResponse, "unexpected response");
    return;
  }
  // Brokers answer in request order on a connection: the answer is the oldest's.
  Outgoing& o = written_.front();
  codec::ResponseHeader h;
  codec::Status st = codec::parse_response_header(
      frame, size, codec::response_header_version(o.api_key, o.version), h);
  if (!st.ok() || h.correlation_id != o.correlation_id) {
    fail_all(ClientError::kBadResponse, "unexpected response");
    return;
  }
  Outgoing mine = std::move(o);
  written_.pop_front();
  BrokerAnswer a;
  a.body = frame + h.size;
  a.size = size - h.size;
  finish(mine, std::move(a));
}

void KafkaClient::fail_all(ClientError error, const std::string& why) {
  ++generation_;
  if (state_ == State::kDialing) dialer_->cancel();
  bool lost = conn_ != nullptr && !conn_->closing() && error != ClientError::kClosed &&
              !disconnecting_;
  if (conn_) {
    conn_->close();
    closing_.push_back(std::move(conn_));
  }
  login_derivation_.reset();
  login_.reset();
  logged_in_ = false;
  relogin_at_ms_ = session_ends_ms_ = login_deadline_ms_ = 0;
  if (state_ != State::kClosed) {
    state_ = State::kIdle;
    uv_timer_stop(&timer_);
  }
  std::deque<Outgoing> written = std::move(written_);
  std::deque<Outgoing> waiting = std::move(waiting_);
  written_.clear();
  waiting_.clear();
  posted_.clear();
  std::vector<std::function<void(ClientError)>> posts = std::move(posts_queued_);
  posts_queued_.clear();
  if (lost && observer_) observer_->on_connection_lost(error, why);
  // Posts whose bytes were still in the output queue may never have left.
  for (auto& w : posts) w(error == ClientError::kClosed ? error : ClientError::kDisconnected);
  uint64_t now = now_ms();
  // Callbacks may send again (a new dial) or close the client: the queues
  // were taken out first.
  for (Outgoing& o : written) {
    BrokerAnswer a;
    bool late = error != ClientError::kClosed && o.answer_by_ms && now >= o.answer_by_ms;
    a.error = late ? ClientError::kTimeout : error;
    a.detail = late ? "request timed out" : why;
    finish(o, std::move(a));
  }
  for (Outgoing& o : waiting) {
    BrokerAnswer a;
    a.error = error;
    a.detail = why;
    finish(o, std::move(a));
  }
}

void KafkaClient::disconnect(const std::string& why) {
  want_connect_ = false;
  if (state_ == State::kClosed) return;
  if (state_ == State::kIdle && waiting_.empty()) return;
  disconnecting_ = true;
  fail_all(ClientError::kDisconnected, why);
  disconnecting_ = false;
}

void KafkaClient::on_read_error(Connection& c, int status) {
  if (&c != conn_.get()) return;
  fail_all(ClientError::kDisconnected,
           status == UV_EOF ? kBrokerClosedDetail : uv_strerror(status));
}

void KafkaClient::on_write_error(Connection& c, int status) {
  if (&c != conn_.get()) return;
  fail_all(ClientError::kDisconnected, uv_strerror(status));
}

void KafkaClient::on_closed(Connection& c) {
  for (auto it = closing_.begin(); it != closing_.end(); ++it) {
    if (it->get() == &c) {
      closing_.erase(it);
      break;
    }
  }
  maybe_closed();
}

void KafkaClient::close(std::function<void()> done) {
  if (state_ == State::kClosed) return;
  on_closed_ = std::move(done);
  if (state_ == State::kDialing) dialer_->cancel();
  uv_timer_stop(&timer_);
  uv_timer_stop(&kick_);
  state_ = State::kClosed;
  fail_all(ClientError::kClosed, "client closed");
  dialer_->close();
  auto closed = [](uv_handle_t* h) {
    auto* c = static_cast<KafkaClient*>(h->data);
    --c->open_timers_;
    c->maybe_closed();
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&timer_), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&kick_), closed);
}

void KafkaClient::on_dialer_closed() {
  dialer_closed_ = true;
  maybe_closed();
}

void KafkaClient::maybe_closed() {
  if (state_ != State::kClosed || open_timers_ != 0 || !dialer_closed_ || !closing_.empty() ||
      !on_closed_)
    return;
  auto cb = std::move(on_closed_);
  cb();
}

}  // namespace epochgate::proxy
