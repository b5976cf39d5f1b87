// proxy/app/refresher.cc
#include "proxy/app/refresher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "codec/api_table.h"
#include "codec/messages/metadata_request.h"
#include "codec/messages/metadata_response.h"
#include "metrics/proxy_metrics.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"

namespace epochgate::proxy {

namespace {
// After a round in which every broker failed: wait this long, doubling
// with each further failed round up to the cap, so a cluster that stays
// away is not dialled (and logged) every second for ever.
constexpr uint64_t kRetryBackoffMs = 1000;
constexpr uint64_t kRetryBackoffMaxMs = 30000;
constexpr const char* kClientId = "epochgate-refresher";
}  // namespace

Refresher::Refresher(uv_loop_t* loop, std::shared_ptr<const config::Config> config,
                     policy::MetadataView& view, metrics::ProxyMetrics* metrics)
    : loop_(loop),
      config_(std::move(config)),
      view_(view),
      metrics_(metrics),
      client_(loop_, pool_, client_options({}), this) {
  uv_timer_init(loop_, &tick_);
  tick_.data = this;
  uv_async_init(loop_, &async_, &Refresher::on_async);
  async_.data = this;
  open_handles_ = 3;  // tick, async, client
}

Refresher::~Refresher() = default;

void Refresher::start() {
  if (!config_->refresher.enabled) return;
  arm();
}

void Refresher::set_config(std::shared_ptr<const config::Config> config) {
  config_ = std::move(config);
  // A new interval or rate limit moves the next due moment either way; a
  // refresher turned off stops its timer here, turned on starts it.
  arm();
}

RefreshSchedule Refresher::schedule() const {
  RefreshSchedule s;
  s.awaiting = state_ == State::kAwaitMetadata;
  s.startup_done = startup_done_;
  s.last_failed_ms = last_failed_ms_;
  s.retry_delay_ms = retry_delay_ms_;
  s.last_full_refresh_ms = last_full_refresh_ms_;
  s.periodic_ms = periodic_due_ms(config_->refresher.interval_ms);
  s.last_refresh_ms = last_refresh_ms_;
  s.urgent_min_interval_ms = config_->refresher.urgent_min_interval_ms;
  std::lock_guard<std::mutex> lock(mu_);
  s.urgent = urgent_;
  return s;
}

void Refresher::arm() {
  if (stopping_ || !config_->refresher.enabled) {
    uv_timer_stop(&tick_);
    return;
  }
  const uint64_t next = schedule().next_ms();
  if (next == RefreshSchedule::kNever) {  // the answer (or its failure) arms again
    uv_timer_stop(&tick_);
    return;
  }
  // The loop's cached time may be behind now_ms() by what this iteration
  // already ran: refreshed, the timer does not fire before `next`.
  uv_update_time(loop_);
  const uint64_t now = now_ms();
  uv_timer_start(&tick_, &Refresher::on_tick, next > now ? next - now : 0, 0);
}

void Refresher::report_session(uint64_t now) {
  const uint64_t session_ends = client_.session_ends_ms();
  if (session_ends && metrics_)
    metrics_->set_sasl_session_expiry(now < session_ends ? (session_ends - now) / 1e3 : 0);
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

void Refresher::request_confirm(std::vector<std::string> topics, const char* trigger) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& t : topics)
      if (confirm_topics_.size() < 10000) confirm_topics_.insert(t);
  }
  request_urgent(std::move(topics), trigger);
}

bool Refresher::confirm_now(uint64_t now, uint64_t interval) {
  std::lock_guard<std::mutex> lock(mu_);
  bool any = false;
  for (const auto& t : confirm_topics_) any = confirm_limiter_.admit_topic(t, now, interval) || any;
  confirm_topics_.clear();
  return any && confirm_limiter_.admit_refresh(now, interval);
}

std::string Refresher::last_broker() const {
  std::lock_guard<std::mutex> lock(broker_mu_);
  return broker_;
}

void Refresher::on_async(uv_async_t* a) {
  auto* r = static_cast<Refresher*>(a->data);
  if (r->stopping_ || !r->config_->refresher.enabled) return;
  r->maybe_refresh(now_ms());
  r->arm();
}

void Refresher::on_tick(uv_timer_t* t) {
  auto* r = static_cast<Refresher*>(t->data);
  r->maybe_refresh(now_ms());
  r->arm();
}

void Refresher::maybe_refresh(uint64_t now) {
  if (stopping_) return;
  report_session(now);
  // While a refresh is in flight nothing is due: the client bounds its wait
  // (the dial by limits.upstream_connect_timeout_ms per broker, each login
  // round and the request by refresher.request_timeout_ms), and its answer
  // or failure arms the timer again.
  switch (schedule().due(now)) {
    case RefreshSchedule::Due::kStartup:
      begin_refresh("startup");
      break;
    case RefreshSchedule::Due::kPeriodic:
      begin_refresh("periodic");
      break;
    case RefreshSchedule::Due::kUrgent:
      begin_refresh(urgent_trigger_);
      break;
    case RefreshSchedule::Due::kUrgentWaits:
      if (confirm_now(now, config_->refresher.urgent_min_interval_ms))
        begin_refresh(urgent_trigger_);
      break;
    case RefreshSchedule::Due::kNothing:
      break;
  }
}

uint64_t Refresher::periodic_due_ms(uint32_t interval_ms) const {
  return static_cast<uint64_t>(static_cast<int64_t>(interval_ms) +
                               static_cast<int64_t>(interval_ms) * jitter_permille_ / 1000);
}

void Refresher::forget_unused_topics(uint64_t now) {
  const uint32_t idle = config_->refresher.topic_idle_ms;
  if (idle == 0) return;
  const std::vector<std::string> gone = view_.forget_unused_topics(now, idle);
  if (gone.empty()) return;
  if (metrics_) {
    metrics_->view_topics_forgotten(gone.size());
    metrics_->set_view_partitions(static_cast<int64_t>(view_.partition_count()));
  }
  constexpr size_t kNamed = 5;
  std::string names;
  for (size_t i = 0; i < gone.size() && i < kNamed; ++i) names += (i ? ", " : "") + gone[i];
  if (gone.size() > kNamed) names += ", ...";
  spdlog::info("metadata view: forgot {} topics no client request named for {} ms "
               "(refresher.topic_idle_ms): {}",
               gone.size(), idle, names);
}

void Refresher::begin_refresh(const char* trigger) {
  trigger_ = trigger;
  const bool periodic = std::string_view(trigger) == "periodic";
  const bool startup = std::string_view(trigger) == "startup";
  if (periodic) jitter_permille_ = jitter_(rng_);
  last_attempt_ms_ = now_ms();
  in_flight_topics_.clear();
  bool all_known = !startup;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (urgent_ && !urgent_all_) {
      in_flight_topics_.assign(urgent_topics_.begin(), urgent_topics_.end());
      all_known = periodic;
    }
    urgent_ = false;
    urgent_all_ = false;
    confirm_topics_.clear();
    urgent_topics_.clear();
  }
  if (all_known) {
    // Periodic (or urgent for everything): the topics the view holds, once
    // the ones no request named for topic_idle_ms have left it.
    forget_unused_topics(last_attempt_ms_);
    auto snap = view_.snapshot();
    snap->for_each_topic([&](const policy::TopicEntry& t) {
      if (in_flight_topics_.size() < 10000) in_flight_topics_.push_back(t.name);
    });
    std::sort(in_flight_topics_.begin(), in_flight_topics_.end());
    in_flight_topics_.erase(std::unique(in_flight_topics_.begin(), in_flight_topics_.end()),
                            in_flight_topics_.end());
  }
  in_flight_all_ = all_known || startup;
  if (state_ == State::kReady) {
    // Same connection; the client logs in again first when the session the
    // broker granted is at 85% of its lifetime (KIP-368).
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
    retry_delay_ms_ =
        retry_delay_ms_ == 0 ? kRetryBackoffMs : std::min(kRetryBackoffMaxMs, retry_delay_ms_ * 2);
    const char* reason = !login_error_.empty()     ? "sasl_login"
                         : closed_at_metadata_ > 0 ? "closed_at_metadata"
                         : connected_in_round_ == 0 ? "unreachable"
                                                    : "request";
    if (metrics_) metrics_->metadata_refresh_failed(reason);
    // Brokers that closed the connection at the Metadata request may want
    // SASL; not once a view loaded without it (then something else did).
    const bool sasl_hint = closed_at_metadata_ > 0 && !config_->upstream_sasl.enabled() &&
                           !loaded_.load();
    if (sasl_hint) closed_at_metadata_seen_.store(true);
    std::string why;
    if (!login_error_.empty()) {
      why = "SASL login (" + config_->upstream_sasl.mechanism + ") failed: " + login_error_;
    } else if (sasl_hint) {
      why = std::to_string(closed_at_metadata_) + " of " + std::to_string(targets_.size()) +
            " brokers answered ApiVersions, then closed the connection at epochgate's Metadata "
            "request, as brokers that require SASL may: set upstream_sasl (docs/config.md) for "
            "epochgate's own connections";
    } else if (connected_in_round_ == 0) {
      why = "no broker reachable (" + std::to_string(targets_.size()) +
            " tried, last: " + (last_failure_.empty() ? "?" : last_failure_) + ")";
    } else {
      why = "no broker answered epochgate's Metadata request (" +
            std::to_string(targets_.size()) + " tried, last: " +
            (last_failure_.empty() ? "?" : last_failure_) + ")";
    }
    // Logged when a loaded view loses its brokers, and at each round before
    // the first load: rounds are spaced by the backoff, so at most one line
    // per kRetryBackoffMaxMs once it is reached.
    if (reachable_.exchange(false) || !loaded_.load()) {
      spdlog::warn("metadata refresh ({}): {}; not ready until one answers, retrying in {} ms",
                   trigger_, why, retry_delay_ms_);
    }
    {
      std::lock_guard<std::mutex> lock(broker_mu_);
      round_error_ = why;
    }
    closed_at_metadata_ = 0;
    connected_in_round_ = 0;
    login_error_.clear();
    last_failure_.clear();
    last_failed_ms_ = now_ms();
    // Keep the refresh pending so it retries after the backoff.
    std::lock_guard<std::mutex> lock(mu_);
    urgent_ = true;
    urgent_all_ = true;
    return;
  }
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
  client_.set_options(client_options(std::move(rest)));
  send_metadata();
}

KafkaClientOptions Refresher::client_options(std::vector<config::HostPort> targets) const {
  KafkaClientOptions o;
  o.targets = std::move(targets);
  o.connect_timeout_ms = config_->limits.upstream_connect_timeout_ms;
  o.login_timeout_ms = config_->refresher.request_timeout_ms;
  o.client_id = kClientId;
  o.sasl = config_->upstream_sasl;
  o.max_outstanding = 1;  // one refresh at a time
  o.max_frame_bytes = config_->limits.max_frame_bytes;
  return o;
}

void Refresher::on_dial_attempt_failed(const UpstreamDialer::Failure& f) {
  {
    std::lock_guard<std::mutex> lock(broker_mu_);
    broker_ = f.target.to_string();
  }
  last_failure_ = f.target.to_string() + ": " + UpstreamDialer::stage_name(f.stage) + ": " +
                  (f.status ? uv_strerror(f.status) : "no valid answer");
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

void Refresher::on_connected(size_t index, const ApiVersionRanges&) {
  target_index_ += index;
  ++connected_in_round_;
  std::lock_guard<std::mutex> lock(broker_mu_);
  broker_ = targets_[target_index_].to_string();
}

void Refresher::on_login(const SaslLoginStep& step, bool again, bool offered) {
  const std::string& mechanism = config_->upstream_sasl.mechanism;
  if (!offered) {
    EPOCHGATE_PROXY_LOG(warn, "sasl_login",
                        "SASL login ({}) to {} impossible: the broker does not offer "
                        "SaslHandshake (a plaintext listener?)",
                        mechanism, last_broker());
    login_error_ = last_broker() + " does not offer SaslHandshake (a plaintext listener?)";
    return;
  }
  if (step.kind == SaslLoginStep::Kind::kDone) {
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
    return;
  }
  if (metrics_) metrics_->sasl_authentication("own", mechanism, false, again);
  EPOCHGATE_PROXY_LOG(warn, "sasl_login", "SASL login ({}) to {} failed: {}", mechanism,
                      last_broker(), step.error);
  login_error_ = last_broker() + ": " + step.error;
  login_reported_ = false;
}

void Refresher::on_connection_lost(ClientError, const std::string& why) {
  // An idle connection the broker closed: the next broker is dialed now, as
  // for a failed request (a request's own failure arrives in its callback).
  if (state_ == State::kReady && !stopping_) {
    fail(why);
    arm();
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
  SendOptions o;
  o.timeout_ms = config_->refresher.request_timeout_ms;
  o.min_version = 1;  // v0 reads an empty topic list as "all topics"
  state_ = State::kAwaitMetadata;
  ClientError refused = client_.send(std::move(req), o, [this](auto&& r) {
    on_metadata_answer(std::move(r));
    // Answered or failed over every broker: the next due moment moved.
    arm();
  });
  if (refused != ClientError::kNone) fail(client_error_name(refused));
}

void Refresher::on_metadata_answer(ClientResult<codec::MetadataResponse>&& r) {
  if (stopping_) return;
  if (r.error == ClientError::kConnectFailed) {  // every remaining broker failed
    target_index_ = targets_.size();
    connect_next();
    return;
  }
  if (!r.ok()) {
    if (r.error == ClientError::kDisconnected && r.detail == kBrokerClosedDetail)
      ++closed_at_metadata_;
    fail(r.detail);
    return;
  }
  closed_at_metadata_ = 0;
  metadata_version_ = r.version;
  learn(r.response);
}

void Refresher::learn(const codec::MetadataResponse& m) {
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
  retry_delay_ms_ = 0;
  connected_in_round_ = 0;
  login_error_.clear();
  {
    std::lock_guard<std::mutex> lock(broker_mu_);
    round_error_.clear();
  }
  if (metrics_) {
    metrics_->metadata_refreshed(std::chrono::duration<double>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  }
  last_refresh_ms_ = now;
  if (in_flight_all_) last_full_refresh_ms_ = now;
  state_ = State::kReady;
  {
    // A move reported while this refresh was out may be confirmed by the
    // next one now, not when the urgent rate limit ends.
    std::lock_guard<std::mutex> lock(mu_);
    if (!confirm_topics_.empty()) uv_async_send(&async_);
  }
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
  last_failure_ = last_broker() + ": " + why;
  client_.disconnect(why);
  if (metrics_) metrics_->set_sasl_session_expiry(0);
  state_ = State::kIdle;
  ++target_index_;
  connect_next();
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
  client_.close([this] {
    if (--open_handles_ == 0 && on_stopped_) {
      auto cb = std::move(on_stopped_);
      cb();
    }
  });
  uv_close(reinterpret_cast<uv_handle_t*>(&tick_), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&async_), closed);
}

std::string Refresher::last_round_error() const {
  std::lock_guard<std::mutex> lock(broker_mu_);
  return round_error_;
}

}  // namespace epochgate::proxy
