// proxy/session.h: one proxied client connection and its one upstream
// connection (DESIGN.md 3). Splits frames, keeps the in-flight queue, forwards
// untouched frames as their original bytes, rewrites the responses that carry
// broker addresses, caps ApiVersions, and writes responses to the client in
// request order. Applies watermark backpressure in both directions.
// Never lets an upstream address reach the client; never answers acks=0.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec/header.h"
#include "proxy/connection.h"
#include "proxy/in_flight_queue.h"
#include "proxy/sasl_framing.h"
#include "proxy/sasl_login.h"
#include "proxy/upstream_dialer.h"
#include "proxy/worker_context.h"

namespace epochgate::proxy {

class SessionList;

/// A client connection accepted on the listener of `node_id` (-1: bootstrap).
class Session : public ConnectionOwner, private UpstreamDialer::Owner {
 public:
  /// `client` carries the client's bytes (an opened TcpTransport from the
  /// worker); it reads nothing before start().
  Session(WorkerContext& ctx, SessionList& list, int32_t node_id,
          std::unique_ptr<Transport> client);
  ~Session() override;

  /// Starts dialing the upstream; reads the client once the broker has
  /// answered on the new connection (UpstreamDialer).
  void start();
  /// Closes both sides (idempotent); the session frees itself when all handles closed.
  void close(const char* reason);
  /// Graceful drain: stop reading new requests; close once nothing is in flight.
  void begin_drain();
  bool idle_for(uint64_t now_ns, uint64_t limit_ns) const;
  /// Counts and logs (once per request) the request the broker owes next when
  /// it has waited limits.upstream_overdue_ms past its own deadline. The
  /// connection stays open: a client with deadlines of its own decides.
  void check_overdue(uint64_t now_ns);
  /// A frame started longer than `limit_ns` ago and is still incomplete.
  bool partial_frame_stalled(uint64_t now_ns, uint64_t limit_ns) const;
  int32_t node_id() const { return node_id_; }
  /// Re-evaluates reading after the buffer budget may have freed up.
  void recheck_budget() {
    if (budget_paused_) update_backpressure();
  }
  /// A paused client does not see its peer's close (nothing reads): true and
  /// closed here when the peer has gone, so its buffers are released.
  bool close_if_client_gone();
  bool budget_paused() const { return budget_paused_; }
  /// The process-wide client connection count this session is part of; it
  /// is decremented when the session closes.
  void count_against(std::atomic<uint32_t>* counter) { counter_ = counter; }

  // Intrusive list links (SessionList).
  Session* prev = nullptr;
  Session* next = nullptr;

  // ConnectionOwner
  void on_readable(Connection& c) override;
  void on_read_error(Connection& c, int status) override;
  void on_drained(Connection& c) override;
  void on_write_error(Connection& c, int status) override;
  void on_closed(Connection& c) override;

 private:
  // kStarting: waiting for a node's address; kDialing: the dialer works (client
  // unread); kOpen: both sides flow; kClosing: handles closing.
  enum class State { kStarting, kDialing, kOpen, kClosing };

  void dial();
  // Sidecar credential mode (upstream_sasl.on_behalf_of_clients): epochgate
  // logs in on the upstream connection; client frames wait until it is done.
  bool logs_in_for_client() const { return ctx_.config->upstream_sasl.on_behalf_of_clients; }
  void start_own_login();
  /// False when the session closed (a refused login).
  bool apply_own_login_step(SaslLoginStep step);
  /// A client SaslHandshake in sidecar credential mode: ILLEGAL_SASL_STATE.
  void refuse_client_sasl(int32_t corr, int16_t version);
  /// Counts how a client's own (passed-through) login ended.
  void count_client_login(SaslLoginOutcome outcome);
  // UpstreamDialer::Owner
  void on_dial_attempt_failed(const UpstreamDialer::Failure& f) override;
  void on_dialed(std::unique_ptr<Connection> conn, size_t index,
                 const ApiVersionRanges& versions) override;
  void on_dial_failed() override;
  void on_dialer_closed() override;
  static void on_connect_timeout(uv_timer_t* t);
  static void on_timer_closed(uv_handle_t* h);
  void connect_failed(const char* why, int status);
  static void on_hold_timer(uv_timer_t* t);

  void process_client_input();
  /// Before the upstream is open: checks the client's first frame (a bad
  /// size prefix closes at once) and stops reading once a whole one waits.
  void check_held_client_input();
  void process_upstream_input();
  enum class Step { kConsumed, kClosed, kHold };
  Step handle_request(const uint8_t* frame, size_t size);
  /// Forwards a raw SASL token (SaslHandshake v0 framing) as it is.
  Step forward_raw_sasl_token(const uint8_t* frame, size_t size);
  /// Delivers the broker's raw answer to a SASL token; false to close.
  bool deliver_raw_sasl_token(const uint8_t* frame, size_t size);
  bool handle_response(const uint8_t* frame, size_t size);
  /// Decodes, learns from and rewrites a response that needs it. Returns false
  /// to close the connection; sets `out` when the bytes changed.
  bool transform_response(InFlightEntry& e, const uint8_t* frame, size_t size,
                          std::vector<uint8_t>& out, bool& changed);
  /// Responses that carry broker addresses: decode, learn, rewrite, let the
  /// policy amend (merge, backfill hints), re-encode only if something changed.
  template <typename M>
  bool rewrite_response(InFlightEntry& e, codec::ResponseHeader& h, const uint8_t* body,
                        size_t body_len, std::vector<uint8_t>& out, bool& changed);
  void deliver(InFlightEntry& e, const uint8_t* frame_with_prefix, size_t len);
  void flush_ready();
  void record_proxy_latency(const InFlightEntry& e);
  /// Marks this session paused on the buffer budget (counted and logged once
  /// per pause, rate-limited) and asks the worker to re-check it soon.
  void pause_for_budget();
  void update_backpressure();
  void maybe_free();
  /// Stops reading the client and closes the session once everything queued
  /// upstream is written (at most limits.upstream_connect_timeout_ms later).
  void close_once_upstream_written(const char* reason);
  void frame_error(const char* reason, const std::string& detail);

  WorkerContext& ctx_;
  SessionList& list_;
  int32_t node_id_;
  State state_ = State::kStarting;
  Connection client_;
  std::unique_ptr<Connection> upstream_;  // set once dialed and answered
  UpstreamDialer dialer_;
  InFlightQueue in_flight_;
  SaslFraming sasl_;
  std::unique_ptr<SaslLogin> own_login_;  // epochgate's login on the upstream, under way
  int32_t own_correlation_ = 0x45470100;  // epochgate's own ids, never a client's
  uint64_t own_relogin_at_ns_ = 0;        // 0: no session lifetime
  bool own_logged_in_ = false;
  bool sasl_resume_client_ = false;  // a SASL answer may have released held client frames
  uv_timer_t connect_timer_;  // waiting for a node's address; request holds
  std::vector<config::HostPort> targets_;
  std::string upstream_name_;
  std::atomic<uint32_t>* counter_ = nullptr;
  int open_handles_ = 2;    // client, timer; +1 once the upstream is handed over
  bool dialer_closed_ = false;
  bool client_paused_ = false;
  bool upstream_paused_ = false;
  bool draining_ = false;
  bool upstream_open_ = false;
  bool client_opened_ = false;  // start() ran: counted in connection metrics
  bool budget_paused_ = false;
  bool processing_client_ = false;
  bool holding_ = false;           // a request waits for a metadata refresh
  const char* close_after_write_ = nullptr;  // closing once upstream bytes are written
  uint64_t hold_started_ns_ = 0;
  uint64_t waiting_for_node_since_ns_ = 0;
  uint64_t last_activity_ns_ = 0;
  uint64_t partial_since_ns_ = 0;  // 0: no partial frame pending
  // Broker limits seen in this connection's ApiVersions, for KIP-951 bridging.
  int16_t broker_max_produce_ = -1;
  int16_t broker_max_fetch_ = -1;
  bool bridge_produce_ = false;
  bool bridge_fetch_ = false;
};

/// Intrusive list of one worker's sessions, for draining and timeouts.
class SessionList {
 public:
  void add(Session* s);
  void remove(Session* s);
  /// Live sessions; readable from any thread (drain progress).
  size_t size() const { return size_.load(); }
  template <typename F>
  void for_each(F&& f) {
    for (Session* s = head_; s != nullptr;) {
      Session* n = s->next;
      f(*s);
      s = n;
    }
  }

 private:
  Session* head_ = nullptr;
  std::atomic<size_t> size_{0};
};

}  // namespace epochgate::proxy
