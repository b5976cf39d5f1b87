// proxy/refresher.cc
#include "proxy/refresher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "codec/api_table.h"
#include "codec/frame_splitter.h"
#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/api_versions_request.h"
#include "codec/messages/api_versions_response.h"
#include "codec/messages/metadata_request.h"
#include "codec/messages/metadata_response.h"
#include "metrics/proxy_metrics.h"
#include "proxy/log_limited.h"

namespace epochgate::proxy {

namespace {
constexpr uint64_t kTickMs = 50;
constexpr uint64_t kRetryBackoffMs = 1000;
constexpr const char* kClientId = "epochgate-refresher";

uint64_t now_ms() { return uv_hrtime() / 1000000; }
}  // namespace

Refresher::Refresher(uv_loop_t* loop, std::shared_ptr<const config::Config> config,
                     policy::MetadataView& view, metrics::ProxyMetrics* metrics)
    : loop_(loop), config_(std::move(config)), view_(view), metrics_(metrics) {
  uv_timer_init(loop_, &tick_);
  tick_.data = this;
  uv_async_init(loop_, &async_, &Refresher::on_async);
  async_.data = this;
  open_handles_ = 3;  // tick, async, dialer
}

Refresher::~Refresher() = default;

void Refresher::start() {
  if (!config_->refresher.enabled) return;
  uv_timer_start(&tick_, &Refresher::on_tick, 0, kTickMs);
}

void Refresher::set_config(std::shared_ptr<const config::Config> config) {
  bool was = config_->refresher.enabled;
  config_ = std::move(config);
  if (!was && config_->refresher.enabled) uv_timer_start(&tick_, &Refresher::on_tick, 0, kTickMs);
  if (was && !config_->refresher.enabled) uv_timer_stop(&tick_);
}

void Refresher::request_urgent(std::vector<std::string> topics, const char* trigger) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The first request of a coalesced batch names the refresh: later ones
    // (a decision asking again for the same topics) are its consequences.
    if (!urgent_) urgent_trigger_ = trigger;
    urgent_ = true;
    if (topics.empty()) urgent_all_ = true;
    for (auto& t : topics) {
      if (urgent_topics_.size() < 10000) urgent_topics_.insert(std::move(t));
    }
  }
  uv_async_send(&async_);
}

std::string Refresher::last_broker() const {
  std::lock_guard<std::mutex> lock(broker_mu_);
  return broker_;
}

void Refresher::on_async(uv_async_t* a) {
  auto* r = static_cast<Refresher*>(a->data);
  if (!r->stopping_ && r->config_->refresher.enabled) r->maybe_refresh(now_ms());
}

void Refresher::on_tick(uv_timer_t* t) {
  auto* r = static_cast<Refresher*>(t->data);
  r->maybe_refresh(now_ms());
}

void Refresher::maybe_refresh(uint64_t now) {
  if (stopping_) return;
  const auto& rc = config_->refresher;
  if (session_ends_ms_ && metrics_)
    metrics_->set_sasl_session_expiry(now < session_ends_ms_ ? (session_ends_ms_ - now) / 1e3 : 0);
  if (state_ == State::kAwaitSasl || state_ == State::kAwaitMetadata) {
    if (now - request_started_ms_ > rc.request_timeout_ms) fail("request timed out");
    return;
  }
  if (state_ == State::kConnecting) return;  // the dialer's deadline bounds it
  if (last_failed_ms_ && now - last_failed_ms_ < kRetryBackoffMs) return;  // all brokers failed
  bool urgent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    urgent = urgent_;
  }
  if (!startup_done_) {
    begin_refresh("startup");
  } else if (urgent && now - last_refresh_ms_ >= rc.urgent_min_interval_ms) {
    begin_refresh(urgent_trigger_);
  } else if (now - last_refresh_ms_ >= rc.interval_ms) {
    begin_refresh("periodic");
  }
}

void Refresher::begin_refresh(const char* trigger) {
  trigger_ = trigger;
  last_attempt_ms_ = now_ms();
  in_flight_topics_.clear();
  bool all_known = std::string_view(trigger) != "startup";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (urgent_ && !urgent_all_) {
      in_flight_topics_.assign(urgent_topics_.begin(), urgent_topics_.end());
      all_known = std::string_view(trigger) == "periodic";
    }
    urgent_ = false;
    urgent_all_ = false;
    urgent_topics_.clear();
  }
  if (all_known) {
    // Periodic (or urgent for everything): the topics the view learned from traffic.
    auto snap = view_.snapshot();
    snap->for_each_topic([&](const policy::TopicEntry& t) {
      if (in_flight_topics_.size() < 10000) in_flight_topics_.push_back(t.name);
    });
    std::sort(in_flight_topics_.begin(), in_flight_topics_.end());
    in_flight_topics_.erase(std::unique(in_flight_topics_.begin(), in_flight_topics_.end()),
                            in_flight_topics_.end());
  }
  if (state_ == State::kReady && conn_) {
    // KIP-368: log in again on the same connection before the session ends.
    if (relogin_at_ms_ && now_ms() >= relogin_at_ms_) {
      begin_login();
      return;
    }
    send_metadata();
    return;
  }
  targets_ = targets();
  target_index_ = 0;
  connect_next();
}

std::vector<config::HostPort> Refresher::targets() const {
  std::vector<config::HostPort> t = config_->bootstrap_servers;
  auto snap = view_.snapshot();
  for (const auto& [id, n] : snap->nodes()) {
    config::HostPort hp{n.host, static_cast<uint16_t>(n.port)};
    if (std::find(t.begin(), t.end(), hp) == t.end()) t.push_back(hp);
  }
  return t;
}

void Refresher::connect_next() {
  if (stopping_) return;
  if (target_index_ >= targets_.size()) {
    state_ = State::kIdle;
    startup_done_ = startup_done_ || loaded_.load();
    if (reachable_.exchange(false) || !loaded_.load())
      spdlog::warn("metadata refresh ({}): no broker reachable ({} tried); not ready until one "
                   "answers, retrying every {} ms", trigger_, targets_.size(), kRetryBackoffMs);
    last_failed_ms_ = now_ms();
    // Keep the refresh pending so it retries after the backoff.
    std::lock_guard<std::mutex> lock(mu_);
    urgent_ = true;
    urgent_all_ = true;
    return;
  }
  state_ = State::kConnecting;
  {
    std::lock_guard<std::mutex> lock(broker_mu_);
    broker_ = targets_[target_index_].to_string();
  }
  // Connected counts only once the broker answered ApiVersions (the dialer's
  // probe), each broker within limits.upstream_connect_timeout_ms: a
  // blackholed or never-accepting broker costs one timeout, not the kernel's
  // connect retries.
  std::vector<config::HostPort> rest(targets_.begin() + static_cast<std::ptrdiff_t>(target_index_),
                                     targets_.end());
  dialer_.dial(std::move(rest), config_->limits.upstream_connect_timeout_ms, kClientId);
}

void Refresher::on_dial_attempt_failed(const UpstreamDialer::Failure& f) {
  {
    std::lock_guard<std::mutex> lock(broker_mu_);
    broker_ = f.target.to_string();
  }
  // A refused connection is quick and a debug line; a broker that let a
  // refresh wait out the whole timeout is worth an operator's attention.
  if (f.status != UV_ETIMEDOUT) {
    spdlog::debug("metadata refresh ({}): broker {}: {} failed after {} ms: {}", trigger_,
                  f.target.to_string(), UpstreamDialer::stage_name(f.stage), f.elapsed_ms,
                  f.status ? uv_strerror(f.status) : "no valid answer");
    return;
  }
  EPOCHGATE_PROXY_LOG(info, "refresher_connect",
                      "metadata refresh ({}): broker {}: {} failed after {} ms: {} "
                      "(limits.upstream_connect_timeout_ms); trying the next broker",
                      trigger_, f.target.to_string(), UpstreamDialer::stage_name(f.stage),
                      f.elapsed_ms, uv_strerror(f.status));
}

void Refresher::on_dialed(std::unique_ptr<Connection> conn, size_t index,
                          const std::vector<int16_t>& max_versions) {
  if (stopping_) {
    conn->set_owner(*this);
    ++open_handles_;
    closing_.push_back(std::move(conn));
    closing_.back()->close();
    return;
  }
  target_index_ += index;
  {
    std::lock_guard<std::mutex> lock(broker_mu_);
    broker_ = targets_[target_index_].to_string();
  }
  conn->set_owner(*this);
  conn_ = std::move(conn);
  ++open_handles_;
  conn_->start_reading();
  int16_t ours = codec::api_info(codec::kMetadata)->max_version;
  int16_t broker = 1;
  if (max_versions.size() > static_cast<size_t>(codec::kMetadata) &&
      max_versions[codec::kMetadata] >= 0)
    broker = max_versions[codec::kMetadata];
  metadata_version_ = std::max<int16_t>(1, std::min(ours, broker));
  if (config_->upstream_sasl.enabled()) {
    bool offered = max_versions.size() > static_cast<size_t>(codec::kSaslHandshake) &&
                   max_versions[codec::kSaslHandshake] >= 0;
    if (!offered) {
      EPOCHGATE_PROXY_LOG(warn, "sasl_login",
                          "SASL login ({}) to {} impossible: the broker does not offer "
                          "SaslHandshake (a plaintext listener?)",
                          config_->upstream_sasl.mechanism, last_broker());
      fail("no SaslHandshake");
      return;
    }
    begin_login();
    return;
  }
  send_metadata();
}

void Refresher::on_dial_failed() {
  target_index_ = targets_.size();
  connect_next();
}

void Refresher::on_dialer_closed() {
  if (--open_handles_ == 0 && on_stopped_) {
    auto cb = std::move(on_stopped_);
    cb();
  }
}

void Refresher::send_metadata() {
  codec::MetadataRequest req;
  req.topics.emplace();
  for (const auto& name : in_flight_topics_) {
    codec::MetadataRequest::MetadataRequestTopic t;
    t.name = name;
    req.topics->push_back(std::move(t));
  }
  req.allow_auto_topic_creation = false;
  codec::RequestHeader h;
  h.api_key = codec::kMetadata;
  h.api_version = metadata_version_;
  h.correlation_id = awaiting_correlation_ = next_correlation_++;
  h.client_id = kClientId;
  std::vector<uint8_t> frame;
  codec::encode_frame(frame, h, req, metadata_version_);
  conn_->queue(frame.data(), frame.size());
  conn_->flush();
  state_ = State::kAwaitMetadata;
  request_started_ms_ = now_ms();
}

void Refresher::begin_login() {
  login_ = std::make_unique<SaslLogin>(config_->upstream_sasl);
  apply_login_step(login_->start(next_correlation_++));
}

void Refresher::apply_login_step(SaslLoginStep step) {
  const std::string& mechanism = config_->upstream_sasl.mechanism;
  switch (step.kind) {
    case SaslLoginStep::Kind::kSend:
      awaiting_correlation_ = login_->awaiting_correlation();
      conn_->queue(step.frame.data(), step.frame.size());
      conn_->flush();
      state_ = State::kAwaitSasl;
      request_started_ms_ = now_ms();
      return;
    case SaslLoginStep::Kind::kDone: {
      bool again = logged_in_;
      logged_in_ = true;
      login_.reset();
      uint64_t now = now_ms();
      relogin_at_ms_ = step.session_lifetime_ms > 0
                           ? now + static_cast<uint64_t>(step.session_lifetime_ms) * 85 / 100
                           : 0;
      session_ends_ms_ =
          step.session_lifetime_ms > 0 ? now + static_cast<uint64_t>(step.session_lifetime_ms) : 0;
      if (metrics_) {
        metrics_->sasl_authentication("own", mechanism, true, again);
        metrics_->set_sasl_session_expiry(step.session_lifetime_ms / 1e3);
      }
      if (!login_reported_) {
        spdlog::info("SASL login ({}) to {} succeeded{}", mechanism, last_broker(),
                     step.session_lifetime_ms > 0
                         ? "; session lifetime " + std::to_string(step.session_lifetime_ms) + " ms"
                         : "");
        login_reported_ = true;
      }
      send_metadata();
      return;
    }
    case SaslLoginStep::Kind::kFailed:
      login_.reset();
      if (metrics_) metrics_->sasl_authentication("own", mechanism, false, logged_in_);
      EPOCHGATE_PROXY_LOG(warn, "sasl_login", "SASL login ({}) to {} failed: {}", mechanism,
                          last_broker(), step.error);
      login_reported_ = false;
      fail("SASL login failed");
      return;
  }
}

void Refresher::on_readable(Connection& c) {
  ByteBuffer& in = c.input();
  while (conn_ && &c == conn_.get() && !in.empty()) {
    codec::FrameScan s = codec::scan_frame(in.begin(), in.size(), config_->limits.max_frame_bytes);
    if (s.kind == codec::FrameScan::Kind::kError) {
      fail(std::string("bad frame: ") + codec::errc_name(s.error));
      return;
    }
    if (s.kind == codec::FrameScan::Kind::kNeedMore) {
      c.reserve_input(s.size, s.size);
      return;
    }
    handle_frame(in.begin() + 4, s.size);
    if (!conn_ || &c != conn_.get()) return;
    in.consume(4 + s.size);
  }
  if (conn_ && &c == conn_.get()) c.release_idle_input();
}

void Refresher::handle_frame(const uint8_t* frame, size_t size) {
  if (state_ == State::kAwaitSasl && login_) {
    apply_login_step(login_->on_response(frame, size, next_correlation_++));
    return;
  }
  codec::ResponseHeader h;
  codec::Status st = codec::parse_response_header(
      frame, size, codec::response_header_version(codec::kMetadata, metadata_version_), h);
  if (!st.ok() || h.correlation_id != awaiting_correlation_) {
    fail("unexpected response");
    return;
  }
  const uint8_t* body = frame + h.size;
  size_t len = size - h.size;
  codec::MetadataResponse m;
  codec::Bytes trailing;
  st = codec::decode_body_allow_trailing(body, len, metadata_version_, m, trailing);
  if (!st.ok()) {
    fail("Metadata: " + st.message());
    return;
  }
  uint64_t now = now_ms();
  policy::LearnReport rep = view_.learn_metadata(m, metadata_version_, now, policy::Source::kRefresher);
  if (on_metadata_) on_metadata_(m);
  if (metrics_) {
    metrics_->metadata_refresh(trigger_);
    metrics_->set_view_partitions(static_cast<int64_t>(view_.partition_count()));
    metrics_->view_epochs_disputed(rep.epochs_disputed);
    metrics_->view_epochs_rolled_back(rep.epochs_rolled_back);
  }
  if (!loaded_.load()) {
    spdlog::info("metadata view loaded from {} (Metadata v{}): {} brokers, {} topics", last_broker(),
                 metadata_version_, m.brokers.size(), m.topics.size());
  }
  if (rep.epochs_advanced > 0) {
    spdlog::debug("metadata refresh ({}): {} epochs advanced", trigger_, rep.epochs_advanced);
  }
  // One line per refresh (not per partition): the view distrusts or rolls
  // back epochs the cluster no longer confirms.
  if (rep.epochs_disputed > 0 || rep.epochs_rolled_back > 0) {
    spdlog::info("metadata refresh via {}: {} view epochs disputed, {} rolled back to the "
                 "epoch the cluster reports (see /debug/metadata)",
                 last_broker(), rep.epochs_disputed, rep.epochs_rolled_back);
  }
  loaded_ = true;
  if (!reachable_.exchange(true)) spdlog::info("metadata refresh: {} answers again", last_broker());
  last_completed_ms_ = now;
  startup_done_ = true;
  last_failed_ms_ = 0;
  last_refresh_ms_ = now;
  state_ = State::kReady;
  if (!rep.urgent_refresh.empty()) {
    std::vector<std::string> names;
    for (const auto& t : rep.urgent_refresh)
      if (!t.name.empty()) names.push_back(t.name);
    // Still inconsistent right after a refresh: retry after the rate limit.
    if (!names.empty()) request_urgent(std::move(names), "urgent");
  }
}

void Refresher::fail(const std::string& why) {
  // Per-broker failures are debug lines; losing every broker is the warning.
  spdlog::debug("metadata refresh via {}: {}", last_broker(), why);
  login_.reset();
  logged_in_ = false;
  relogin_at_ms_ = session_ends_ms_ = 0;
  if (metrics_) metrics_->set_sasl_session_expiry(0);
  if (conn_) {
    closing_.push_back(std::move(conn_));
    closing_.back()->close();
  }
  state_ = State::kIdle;
  ++target_index_;
  connect_next();
}

void Refresher::on_read_error(Connection& c, int status) {
  if (conn_ && &c == conn_.get()) fail(status == UV_EOF ? "broker closed the connection" : uv_strerror(status));
}

void Refresher::on_write_error(Connection& c, int status) {
  if (conn_ && &c == conn_.get()) fail(uv_strerror(status));
}

void Refresher::on_closed(Connection& c) {
  --open_handles_;
  for (auto it = closing_.begin(); it != closing_.end(); ++it) {
    if (it->get() == &c) {
      closing_.erase(it);
      break;
    }
  }
  if (stopping_ && open_handles_ == 0 && on_stopped_) {
    auto cb = std::move(on_stopped_);
    cb();
  }
}

void Refresher::stop(std::function<void()> done) {
  stopping_ = true;
  on_stopped_ = std::move(done);
  uv_timer_stop(&tick_);
  auto closed = [](uv_handle_t* h) {
    auto* r = static_cast<Refresher*>(h->data);
    if (--r->open_handles_ == 0 && r->on_stopped_) {
      auto cb = std::move(r->on_stopped_);
      cb();
    }
  };
  if (conn_) {
    closing_.push_back(std::move(conn_));
    closing_.back()->close();
  }
  dialer_.close();
  uv_close(reinterpret_cast<uv_handle_t*>(&tick_), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), closed);
}

}  // namespace epochgate::proxy
