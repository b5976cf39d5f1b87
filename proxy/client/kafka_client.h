// proxy/client/kafka_client.h: epochgate's own Kafka client on one upstream
// connection it owns: dialed by UpstreamDialer (targets in order, a deadline
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
#include "proxy/client/sasl_login.h"
#include "proxy/client/scram_derivation.h"
#include "proxy/client/upstream_dialer.h"
#include "proxy/net/buffer_pool.h"
#include "proxy/net/clock.h"
#include "proxy/net/connection.h"

namespace epochgate::proxy {

/// Why a request got no typed response (or was refused by send()).
enum class ClientError {
  kNone,                ///< answered; the response carries the broker's own error codes
  kBusy,                ///< send() only: max_outstanding requests already wait
  kClosed,              ///< the client is closed (or closing)
  kConnectFailed,       ///< every target failed to resolve, connect or answer ApiVersions
  kLoginFailed,         ///< the SASL login was refused or is impossible on this broker
  kUnsupportedVersion,  ///< no version in broker, codec and caller ranges together
  kTimeout,             ///< not answered within its timeout (or a login round timed out)
  kDisconnected,        ///< the connection closed or failed before the answer
  kBadResponse,         ///< an answer that is not a valid response to this request
};
/// Stable lower-case name of `e` ("timeout", ...), for logs and metric labels.
const char* client_error_name(ClientError e);
/// ClientResult::detail of a kDisconnected whose broker closed the
/// connection cleanly (EOF) before answering.
inline constexpr const char* kBrokerClosedDetail = "broker closed the connection";

/// How a request may be sent.
struct SendOptions {
  /// Milliseconds from the moment the request is written until its answer.
  /// Waiting for the connection is bounded separately (connect_timeout_ms
  /// per target, login_timeout_ms per login round).
  uint32_t timeout_ms = 5000;
  /// Non-zero: milliseconds from send()/post() until the request is
  /// answered (or, for a post, written), waiting for the dial and the
  /// login included; past it the request fails with kTimeout. A request
  /// still waiting for the connection then leaves without dropping it; a
  /// written one is bounded by the smaller of the two limits.
  uint32_t deadline_ms = 0;
  /// Caller's version bounds, intersected with the codec's and the broker's.
  int16_t min_version = 0;
  int16_t max_version = 0x7fff;
  /// Request header client id for this request (brokers account quotas by
  /// user and client id: a request made for a client carries its id);
  /// empty: KafkaClientOptions::client_id.
  std::string client_id;
};

/// A typed answer: `response` is valid when ok(). Byte views inside it
/// (codec::Bytes) point into the connection's input and are valid only
/// during the callback.
template <class Resp>
struct ClientResult {
  ClientError error = ClientError::kNone;
  std::string detail;    ///< why, for a log line ("request timed out", ...)
  int16_t version = -1;  ///< version the request went at (-1: not written)
  int32_t correlation_id = 0;
  Resp response;
  bool ok() const { return error == ClientError::kNone; }
};

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

/// One upstream connection with typed requests. All calls on the loop thread.
class KafkaClient : public ConnectionOwner, private UpstreamDialer::Owner {
 public:
  template <class Req>
  using ResponseOf = typename codec::Api<Req::kApiKey>::Response;
  template <class Req>
  using Callback = std::function<void(ClientResult<ResponseOf<Req>>&&)>;

  KafkaClient(uv_loop_t* loop, BufferPool& pool, KafkaClientOptions options,
              KafkaClientObserver* observer = nullptr);
  ~KafkaClient() override;
  KafkaClient(const KafkaClient&) = delete;
  KafkaClient& operator=(const KafkaClient&) = delete;

  /// Sends `req` (dialing and logging in first when not connected).
  /// Returns kNone when accepted: `done` then runs exactly once, never from
  /// inside send(). Any other value refuses it now (kClosed, kBusy, or
  /// kUnsupportedVersion when the broker's versions are known already) and
  /// `done` never runs. Byte views in `req` must stay valid until `done`.
  template <class Req>
  ClientError send(Req req, const SendOptions& options, Callback<Req> done,
                   std::shared_ptr<const void> keep_alive = nullptr) {
    Outgoing out = outgoing(std::move(req), options, std::move(keep_alive));
    out.done = [done = std::move(done)](RawAnswer&& raw) {
      ClientResult<ResponseOf<Req>> r;
      r.error = raw.error;
      r.detail = std::move(raw.detail);
      r.version = raw.version;
      r.correlation_id = raw.correlation_id;
      if (r.ok()) {
        codec::Bytes trailing;
        codec::Status st = codec::decode_body_allow_trailing(raw.body, raw.size, raw.version,
                                                             r.response, trailing);
        if (!st.ok()) {
          r.error = ClientError::kBadResponse;
          r.detail = std::string(codec::api_info(Req::kApiKey)->name) + ": " + st.message();
        }
      }
      done(std::move(r));
    };
    return submit(std::move(out));
  }

  /// Sends `req` expecting no answer (Produce with acks=0): written once
  /// the connection is up, forgotten after. Same refusals as send().
  /// `keep_alive` (both calls): what `req`'s byte views point into, kept
  /// until the request is encoded or dropped. `written`, when set, runs
  /// once (never inside post()): kNone when the transport has taken every
  /// byte of the request, else why it was never written. An answer the
  /// broker sends anyway (the librdkafka mock answers acks=0 Produce) is
  /// recognised by its correlation id, dropped and reported to the observer
  /// (on_post_answered), never mistaken for another request's answer.
  template <class Req>
  ClientError post(Req req, const SendOptions& options,
                   std::shared_ptr<const void> keep_alive = nullptr,
                   std::function<void(ClientError)> written = nullptr) {
    Outgoing out = outgoing(std::move(req), options, std::move(keep_alive));
    out.written = std::move(written);
    return submit(std::move(out));
  }

  /// Replaces the targets the next dial tries (the current connection stays).
  void set_targets(std::vector<config::HostPort> targets);
  /// Replaces every option (a reloaded config); the next dial and login use
  /// them, the current connection and its requests keep theirs.
  void set_options(KafkaClientOptions options) { options_ = std::move(options); }
  /// upstream_tls for later dials (SNI and hostname check against each
  /// target's host) when `options.transport` is unset; all null: plain TCP.
  void set_tls(const tls::TlsServices& tls) { dialer_.set_tls(tls); }
  /// Dials now without a request (warming a connection); no-op when
  /// connected or dialing.
  void connect();
  /// Closes the connection: every waiting or written request fails with
  /// kDisconnected and `why`. The next send() dials again.
  void disconnect(const std::string& why = "disconnected by epochgate");
  /// Fails everything with kClosed and closes all handles; `done` runs once
  /// nothing of the client is left on the loop. Idempotent.
  void close(std::function<void()> done);

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

  struct RawAnswer {
    ClientError error = ClientError::kNone;
    std::string detail;
    int16_t version = -1;
    int32_t correlation_id = 0;
    const uint8_t* body = nullptr;
    size_t size = 0;
  };
  struct Outgoing {
    int16_t api_key = 0;
    int16_t lo = 0;
    int16_t hi = 0;
    uint32_t timeout_ms = 0;
    std::string client_id;  // empty: options_.client_id
    std::function<void(std::vector<uint8_t>&, const codec::RequestHeader&, int16_t)> encode;
    std::function<void(RawAnswer&&)> done;  // empty: no answer expected
    std::function<void(ClientError)> written;  // post() only: see post()
    int16_t version = -1;
    int32_t correlation_id = 0;
    uint64_t deadline_ms = 0;
    uint64_t give_up_ms = 0;  // SendOptions::deadline_ms, monotonic ms; 0: none
  };
  static uint64_t give_up_at(const SendOptions& o) {
    return o.deadline_ms ? now_ms() + o.deadline_ms : 0;
  }
  /// Fails the waiting (unwritten) requests whose give_up_ms has passed
  /// with kTimeout. False when a callback dropped or closed the client.
  bool expire_waiting(uint64_t now);

  ClientError submit(Outgoing out);
  /// What send() and post() share: `req` (held until encoded or dropped,
  /// with `keep_alive`), its version range and its time bounds.
  template <class Req>
  Outgoing outgoing(Req req, const SendOptions& options, std::shared_ptr<const void> keep_alive) {
    auto held = std::make_shared<Req>(std::move(req));
    Outgoing out;
    out.api_key = Req::kApiKey;
    out.lo = std::max<int16_t>(Req::kMinVersion, options.min_version);
    out.hi = std::min<int16_t>(Req::kMaxVersion, options.max_version);
    out.timeout_ms = options.timeout_ms;
    out.give_up_ms = give_up_at(options);
    out.client_id = options.client_id;
    out.encode = [held, keep_alive](std::vector<uint8_t>& frame, const codec::RequestHeader& h,
                                    int16_t v) { codec::encode_frame(frame, h, *held, v); };
    return out;
  }
  // UpstreamDialer::Owner
  void on_dial_attempt_failed(const UpstreamDialer::Failure& f) override;
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
  void finish(Outgoing& o, RawAnswer&& a);
  /// Runs the `written` callbacks of posts whose bytes were queued, with
  /// `e`, once the connection's output is empty (kNone) or lost.
  void report_posts_written(ClientError e);
  /// True (and forgotten) when `correlation_id` is a post's.
  bool take_posted(int32_t correlation_id);
  void maybe_closed();

  uv_loop_t* loop_;
  BufferPool& pool_;
  KafkaClientOptions options_;
  KafkaClientObserver* observer_;
  UpstreamDialer dialer_;
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
  bool want_connect_ = false;
  bool disconnecting_ = false;  // inside disconnect(): no on_connection_lost()  // connect() asked for a dial without a request
  std::function<void()> on_closed_;
};

}  // namespace epochgate::proxy
