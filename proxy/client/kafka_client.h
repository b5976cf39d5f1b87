// proxy/client/kafka_client.h: epochgate's own Kafka client on one upstream
// connection it owns, the BrokerClient (proxy/client/broker_client.h) of
// the refresher, the rerouter and the poster: dialed by UpstreamDialer
// (or whatever Dialer it is handed; targets in order, a deadline
// per target, an answered ApiVersions), logged in with SaslLogin when
// upstream_sasl is set (and again before the session the broker granted
// ends, KIP-368), then typed requests of the codec's generated messages at
// the highest version the broker, the codec and the caller all allow, each
// with a correlation id of its own, answered in order by a typed response or
// by exactly one error callback (timeout, connection lost, bad answer).
// Every wait is bounded: the dial by its per-target deadline, each login
// round and each written request by its own timeout.
// Owns its dialer, its connection and one timer. Never touches a client's
// connection, never retries a request by itself (the caller knows whether a
// retry is safe) and never sends anything the caller did not ask for besides
// the dialer's ApiVersions probe and the SASL login.
#pragma once

#include <uv.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "codec/api_table.h"
#include "codec/api_version_ranges.h"
#include "codec/message_io.h"
#include "codec/messages/api_traits.h"
#include "config/config.h"
#include "proxy/client/broker_client.h"
#include "proxy/client/sasl_login.h"
#include "proxy/client/scram_derivation.h"
#include "proxy/client/upstream_dialer.h"
#include "proxy/net/buffer_pool.h"
#include "proxy/net/clock.h"
#include "proxy/net/connection.h"

namespace epochgate::proxy {

/// What happened to the connection, for the owner's logs and metrics. All
/// calls on the loop thread; the client may be used from inside them.
class KafkaClientObserver {
 public:
  virtual ~KafkaClientObserver() = default;
  /// One target failed; the dialer goes on with the next one.
  virtual void on_dial_attempt_failed(const UpstreamDialer::Failure&) {}
  /// Target `index` of the current list answered ApiVersions.
  virtual void on_connected(size_t /*index*/, const ApiVersionRanges&) {}
  /// A login finished. kDone: `session_lifetime_ms` granted, `again` when
  /// it renewed a login on the same connection. kFailed: `error` says why;
  /// `offered` is false when the broker does not offer SaslHandshake at all.
  virtual void on_login(const SaslLoginStep& /*result*/, bool /*again*/, bool /*offered*/) {}
  /// The connection closed or failed (`why`), before the callbacks of the
  /// requests it held run; not called for disconnect() or close().
  virtual void on_connection_lost(ClientError /*error*/, const std::string& /*why*/) {}
  /// The broker answered a request sent with post() (no answer expected);
  /// the answer was dropped.
  virtual void on_post_answered() {}
};

/// Limits and identity of one client.
struct KafkaClientOptions {
  std::vector<config::HostPort> targets;  ///< tried in order by each dial
  uint32_t connect_timeout_ms = 10000;    ///< per target: resolve + connect + ApiVersions
  uint32_t login_timeout_ms = 5000;       ///< per SASL round trip
  std::string client_id = "epochgate";    ///< request header client id
  config::UpstreamSaslConfig sasl;        ///< logs in when sasl.enabled()
  size_t max_outstanding = 64;            ///< requests waiting or written, per client
  uint32_t max_frame_bytes = 100 * 1024 * 1024;  ///< larger answers close the connection
  /// The byte stream over each dialed socket (TLS later); unset: plain TCP.
  UpstreamDialer::TransportWrapper transport;
};

/// One upstream connection with typed requests (BrokerClient::send and
/// post). All calls on the loop thread.
class KafkaClient : public BrokerClient, public ConnectionOwner, private DialerOwner {
 public:
  /// Makes the dialer of each connection; the default builds an
  /// UpstreamDialer over TCP (or TLS, set_tls). Unit tests hand in one
  /// that connects in memory.
  using MakeDialer = std::function<std::unique_ptr<Dialer>(DialerOwner&)>;

  KafkaClient(uv_loop_t* loop, BufferPool& pool, KafkaClientOptions options,
              KafkaClientObserver* observer = nullptr);
  /// The same over the dialer `make_dialer` builds (called once, now).
  KafkaClient(uv_loop_t* loop, const MakeDialer& make_dialer, KafkaClientOptions options,
              KafkaClientObserver* observer = nullptr);
  ~KafkaClient() override;
  KafkaClient(const KafkaClient&) = delete;
  KafkaClient& operator=(const KafkaClient&) = delete;

  /// BrokerClient: takes a request from send() or post(); kNone, or kClosed,
  /// kBusy (max_outstanding waiting or written), kUnsupportedVersion (the
  /// broker's versions are known and none fits).
  ClientError submit(BrokerRequest req) override;

  /// Replaces the targets the next dial tries (the current connection stays).
  void set_targets(std::vector<config::HostPort> targets);
  /// Replaces every option (a reloaded config); the next dial and login use
  /// them, the current connection and its requests keep theirs.
  void set_options(KafkaClientOptions options) { options_ = std::move(options); }
  /// upstream_tls for later dials (SNI and hostname check against each
  /// target's host) when `options.transport` is unset; all null: plain TCP.
  /// No-op over a dialer from MakeDialer.
  void set_tls(const tls::TlsServices& tls) {
    if (upstream_dialer_) upstream_dialer_->set_tls(tls);
  }
  /// Dials now without a request (warming a connection); no-op when
  /// connected or dialing.
  void connect();
  /// Closes the connection: every waiting or written request fails with
  /// kDisconnected and `why`. The next send() dials again.
  void disconnect(const std::string& why = "disconnected by epochgate") override;
  /// Fails everything with kClosed and closes all handles; `done` runs once
  /// nothing of the client is left on the loop. Idempotent.
  void close(std::function<void()> done) override;

  /// Connected, logged in if configured, and not renewing a login.
  bool ready() const { return state_ == State::kReady; }
  /// Requests accepted and not yet answered or failed.
  size_t outstanding() const { return waiting_.size() + written_.size(); }
  /// The broker's versions (empty before the first connection).
  const ApiVersionRanges& broker_versions() const { return versions_; }
  /// The target connected to ("" when none).
  std::string peer_target() const;
  /// Monotonic ms when the SASL session ends, 0 when none or unbounded.
  uint64_t session_ends_ms() const { return session_ends_ms_; }

  // ConnectionOwner
  void on_readable(Connection& c) override;
  void on_read_error(Connection& c, int status) override;
  void on_drained(Connection& c) override;
  void on_write_error(Connection& c, int status) override;
  void on_closed(Connection& c) override;

 private:
  enum class State { kIdle, kDialing, kLoggingIn, kReady, kClosed };

  /// An accepted request and what the connection adds to it.
  struct Outgoing : BrokerRequest {
    explicit Outgoing(BrokerRequest r) : BrokerRequest(std::move(r)) {}
    int16_t version = -1;
    int32_t correlation_id = 0;
    uint64_t answer_by_ms = 0;  // written: monotonic ms its answer is due
    uint64_t give_up_ms = 0;    // BrokerRequest::deadline_ms from submit(), monotonic ms; 0: none
  };
  /// Fails the waiting (unwritten) requests whose give_up_ms has passed
  /// with kTimeout. False when a callback dropped or closed the client.
  bool expire_waiting(uint64_t now);

  // DialerOwner
  void on_dial_attempt_failed(const DialFailure& f) override;
  void on_dialed(std::unique_ptr<Connection> conn, size_t index,
                 const ApiVersionRanges& versions) override;
  void on_dial_failed() override;
  void on_dialer_closed() override;

  void start_login();
  void apply_login_step(SaslLoginStep step);
  /// Writes waiting requests while ready (a due re-login first).
  void pump();
  void handle_frame(const uint8_t* frame, size_t size);
  /// Drops the connection and fails every request: written ones that
  /// passed their deadline with kTimeout, the rest with `error`.
  void fail_all(ClientError error, const std::string& why);
  void arm_timer();
  static void on_timer(uv_timer_t* t);
  /// Runs pump() or starts the dial from the loop, so that no callback ever
  /// runs inside send().
  void kick();
  static void on_kick(uv_timer_t* t);
  int32_t next_correlation();
  void finish(Outgoing& o, BrokerAnswer&& a);
  /// Runs the `written` callbacks of posts whose bytes were queued, with
  /// `e`, once the connection's output is empty (kNone) or lost.
  void report_posts_written(ClientError e);
  /// True (and forgotten) when `correlation_id` is a post's.
  bool take_posted(int32_t correlation_id);
  void maybe_closed();

  uv_loop_t* loop_;
  KafkaClientOptions options_;
  KafkaClientObserver* observer_;
  // Declared before dialer_: the default MakeDialer sets it while dialer_ is built.
  UpstreamDialer* upstream_dialer_ = nullptr;  // dialer_ when it is the default one
  std::unique_ptr<Dialer> dialer_;
  uv_timer_t timer_;  // the earliest login or request deadline
  uv_timer_t kick_;   // zero-delay: work accepted by send()
  State state_ = State::kIdle;
  std::unique_ptr<Connection> conn_;
  std::vector<std::unique_ptr<Connection>> closing_;
  std::vector<config::HostPort> dialed_;  // the list of the current dial
  size_t connected_index_ = 0;
  ApiVersionRanges versions_;
  std::deque<Outgoing> waiting_;  // accepted, not yet written
  std::deque<Outgoing> written_;  // written, answers come in this order
  // Posts queued on the connection whose bytes may not all be out yet.
  std::vector<std::function<void(ClientError)>> posts_queued_;
  // Correlation ids of the latest posts: an answer to one is dropped.
  // Bounded (brokers send none); an older post's answer is "unexpected".
  std::deque<int32_t> posted_;
  static constexpr size_t kPostedKept = 1024;
  std::unique_ptr<SaslLogin> login_;
  std::unique_ptr<ScramDerivation> login_derivation_;  // its salted password, off the loop
  uint64_t login_deadline_ms_ = 0;
  bool logged_in_ = false;  // on the current connection
  uint64_t relogin_at_ms_ = 0;
  uint64_t session_ends_ms_ = 0;
  int32_t correlation_ = 0;
  uint64_t generation_ = 0;  // bumped whenever the connection is dropped
  int open_timers_ = 2;
  bool dialer_closed_ = false;
  bool want_connect_ = false;   // connect() asked for a dial without a request
  bool disconnecting_ = false;  // inside disconnect(): no on_connection_lost()
  std::function<void()> on_closed_;
};

}  // namespace epochgate::proxy
