// proxy/session/session.h: one proxied client connection and its one upstream
// connection (docs/architecture.md section 3): the state machine that wires the parts, each in
// a file of its own: the dialer (proxy/core/dialer.h), the request path
// (proxy/session/request_path.h), the response path (proxy/session/response_path.h), flow
// control (proxy/session/flow_control.h) and the in-flight requests
// (proxy/core/in_flight_queue.h). Owns both connections, the session's timers
// (one per purpose) and epochgate's own SASL login in sidecar mode; splits frames out of the
// input buffers. Never lets an upstream address reach the client; never
// answers acks=0.
#pragma once

#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "codec/header.h"
#include "proxy/client/sasl_login.h"
#include "proxy/client/scram_derivation.h"
#include "proxy/core/dialer.h"
#include "proxy/core/in_flight_queue.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/connection.h"
#include "proxy/session/flow_control.h"
#include "proxy/session/partial_frame_clock.h"
#include "proxy/session/request_path.h"
#include "proxy/session/request_stream.h"
#include "proxy/session/response_path.h"
#include "proxy/session/sasl_framing.h"
#include "proxy/session/session_host.h"

namespace epochgate::proxy {

class SessionList;

/// A client connection accepted on the listener of `node_id` (-1: bootstrap).
class Session : public ConnectionOwner, private DialerOwner, private SessionHost {
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
  void close(CloseReason reason) override;
  /// Graceful drain: stop reading new requests; close once nothing is in
  /// flight and a request held before the drain (order, refresh) was answered.
  void begin_drain();
  bool idle_for(uint64_t now_ns, uint64_t limit_ns) const {
    return owes_nothing() && now_ns - last_activity_ns_ > limit_ns;
  }
  /// Counts and logs (once per request) the request the broker owes next (a
  /// Fetch whose response streams, until its last byte) when it has waited
  /// limits.upstream_overdue_ms past its own deadline. The
  /// connection stays open: a client with deadlines of its own decides.
  void check_overdue(uint64_t now_ns);
  /// A frame has been incomplete for more than `limit_ns` of the client's
  /// own time: while its reads are held for the broker, the clock stops
  /// (proxy/session/partial_frame_clock.h).
  bool partial_frame_stalled(uint64_t now_ns, uint64_t limit_ns) const {
    return partial_.stalled(now_ns, limit_ns);
  }
  int32_t node_id() const { return node_id_; }
  /// Re-evaluates reading after the buffer budget may have freed up.
  void recheck_budget() {
    if (flow_.budget_paused()) update_backpressure();
  }
  /// A paused client does not see its peer's close (nothing reads): true and
  /// closed here when the peer has gone, so its buffers are released.
  bool close_if_client_gone();
  bool budget_paused() const { return flow_.budget_paused(); }
  /// Requests this session still owes its client (closing ones included:
  /// they are freed with the session).
  size_t in_flight_count() const { return in_flight_.size(); }
  /// 1 while the session has an upstream connection (dialing, open, or
  /// closing and not yet released), else 0.
  int upstream_connections() const {
    if (upstream_) return 1;
    // Closing, a dialer not yet released may still hold an attempt's socket.
    return state_ == State::kDialing || (state_ == State::kClosing && dialer_) ? 1 : 0;
  }
  /// The process-wide client connection count this session is part of; it
  /// is decremented when the session closes.
  void count_against(std::atomic<uint32_t>* counter) { counter_ = counter; }

  // The session's states. Events move it along the arrows; every state can
  // go to kClosing (a peer closes or errs, bad bytes, drain done, close()).
  //
  //   kCreated --start(), node address known--------------> kDialing
  //       |                                                   ^   |
  //       | start(), address unknown                          |   | dialed and
  //       v                      address learnt (address_timer_)  | answered
  //   kAwaitingAddress ---------------------------------------+   v
  //       |                                                     kOpen
  //       | still unknown after        every target failed |      |
  //       | limits.upstream_connect_timeout_ms              |      |
  //       v                                                 v      v
  //   kClosing <-------------------------------------------+------+
  //       |  each handle closes (client, three timers, dialer, upstream)
  //       v
  //   freed (delete this)
  //
  // While kAwaitingAddress/kDialing the client is read only until one whole
  // frame waits (check_held_client_input). Inside kOpen, Intake says whether
  // the request path takes requests. Two more things stop it without a state
  // of their own: epochgate's own SASL login in sidecar mode (own_login_ is
  // that login) and a SASL exchange of the client's (sasl_). A drain
  // (draining_) is not a state either: it can begin in any state before
  // kClosing and combines with each (a request held before it still goes).
  // Nor is the client's end of stream (client_eof_, a half-close): the
  // requests it sent before are answered, then the session closes.
  enum class State { kCreated, kAwaitingAddress, kDialing, kOpen, kClosing };
  // What the request path does with the client's requests inside kOpen;
  // kFlowing in every other state.
  //
  //   kFlowing --hold_request()--> kHeld --hold_timer_--> kFlowing
  //      |                           |
  //      +--close_once_upstream_written()--> kClosingAfterWrite
  //                                  |        (closes when the upstream took its
  //                                  +------>  bytes or at write_deadline_timer_)
  enum class Intake {
    kFlowing,            // requests go to the request path
    kHeld,               // a request waits for a metadata refresh or for order
    kClosingAfterWrite,  // nothing more is read; closes once upstream bytes are written
  };
  /// The state's name, for logs and tests.
  static const char* state_name(State s);
  /// The intake's name, for logs and tests.
  static const char* intake_name(Intake i);
  /// The session's state and, inside kOpen, its intake.
  State state() const { return state_; }
  Intake intake() const { return intake_; }

  // Intrusive list links (SessionList).
  Session* prev = nullptr;
  Session* next = nullptr;

  // ConnectionOwner
  void on_readable(Connection& c) override;
  void on_read_error(Connection& c, int status) override;
  void on_drained(Connection& c) override;
  void on_write_error(Connection& c, int status) override;
  void on_closed(Connection& c) override;
  ssize_t take_read_turn(Connection& c) override;

 private:
  void dial();
  // Sidecar credential mode (upstream_sasl.on_behalf_of_clients): epochgate
  // logs in on the upstream connection; client frames wait until it is done.
  bool logs_in_for_client() const { return ctx_.config->upstream_sasl.on_behalf_of_clients; }
  void start_own_login();
  /// False when the session closed (a refused login).
  bool apply_own_login_step(SaslLoginStep step);
  // DialerOwner
  void on_dial_attempt_failed(const DialFailure& f) override;
  void on_dialed(std::unique_ptr<Connection> conn, size_t index,
                 const ApiVersionRanges& versions) override;
  void on_dial_failed() override;
  void on_dialer_closed() override;
  // SessionHost
  void frame_error(CloseReason reason, const std::string& detail) override;
  void close_once_upstream_written(CloseReason reason) override;
  void hold_request() override;
  void reoffer_held() override;
  void count_client_login(SaslLoginOutcome outcome) override;
  void sasl_answered() override { sasl_resume_client_ = true; }
  void responses_flushed() override;

  // The timers, one per purpose; each runs only in its state.
  static void on_address_timer(uv_timer_t* t);        // kAwaitingAddress: poll for it
  static void on_hold_timer(uv_timer_t* t);           // kOpen/kHeld: offer it again
  static void on_write_deadline_timer(uv_timer_t* t);  // kOpen/kClosingAfterWrite: give up
  static void on_timer_closed(uv_handle_t* h);
  void connect_failed(const char* why, int status);

  /// Splits whole requests out of the client input and hands each to the
  /// request path, while the state lets requests flow.
  void process_client_input();
  /// Before the upstream is open: checks the client's first frame (a bad
  /// size prefix closes at once) and stops reading once a whole one waits.
  void check_held_client_input();
  /// Splits whole responses out of the upstream input: to epochgate's own
  /// login while it runs, else to the response path.
  void process_upstream_input();
  void update_backpressure();
  /// Whether the client frame of `size` bytes (prefix excluded) at the head
  /// of the input is held to the pre-authentication cap.
  PreAuthCap pre_auth_cap(size_t size);
  /// Closes the session (counted as pre_auth_frame_too_large) when the
  /// frame passes the pre-authentication cap; true if it did.
  bool pre_auth_refused(size_t size);
  /// The frame's API key, which decides its cap, has not arrived yet.
  bool pre_auth_header_missing(size_t size);
  /// Nothing accepted from the client is unanswered: nothing in flight and
  /// no request held (a held request was accepted and still goes).
  bool owes_nothing() const {
    return in_flight_.empty() && !requests_.holds_request() && !request_stream_.active();
  }
  /// After a drain began, closes the session once it owes nothing; after the
  /// client's end of stream, once it owes nothing, no whole request waits in
  /// its input and its answers are written (on_drained() checks again);
  /// either way only once what was accepted for the broker is written.
  /// True if it closed.
  bool finish_if_done();
  /// True when nothing waits to be written to the broker; else asks
  /// on_drained() to check again.
  bool upstream_written();
  /// A FIN is answered as a half-close: plaintext (writes_after_peer_eof()),
  /// drain_timeout_ms above 0, not already closing after a write.
  bool answers_after_eof() const;
  /// After the end of stream, a whole request waits on an open session
  /// (which no read will offer again).
  bool eof_offer_pending() const;
  /// The client's input holds what processing would take: a whole request,
  /// or the rest (or only the end) of a streamed one.
  bool input_waiting() const;
  /// A streamed request whose rest never arrives: the client's input holds
  /// less of it than is left, and after the end of stream nothing more comes.
  bool stream_cut_short() const;
  /// After the end of stream: offers what the input holds (no read will),
  /// unless it waits for the budget or for order.
  void offer_after_eof();
  /// The client sent its end of stream (UV_EOF) and may still read, as after
  /// shutdown(SHUT_WR): Kafka's brokers answer the requests read before it,
  /// then close, and so does epochgate, like a drain of this one session:
  /// at most `drain_timeout_ms` later (0: at once). A streamed request cut
  /// short (stream_cut_short()), or a TLS client
  /// (Transport::writes_after_peer_eof()), closes at once.
  void on_client_eof();
  /// After the end of stream: the bound passed (closes, with a log line
  /// naming what was owed), or a whole request waits that no event offered.
  void on_eof_timer();
  /// Starts write_deadline_timer_ for on_eof_timer(): in kEofOfferIntervalMs
  /// while eof_offer_pending(), else at the bound.
  void arm_eof_timer();
  /// How soon a whole request read before the end of stream is offered again
  /// when no event did, in ms.
  static constexpr uint64_t kEofOfferIntervalMs = 50;
  /// The client's input holds a whole request frame not yet handled.
  bool complete_frame_waiting() const;
  /// kOpen and taking requests or holding one (not closing after a write).
  bool open_for_requests() const {
    return state_ == State::kOpen && intake_ != Intake::kClosingAfterWrite;
  }
  void maybe_free();

  WorkerContext& ctx_;
  SessionList& list_;
  int32_t node_id_;
  State state_ = State::kCreated;
  Intake intake_ = Intake::kFlowing;
  CloseReason close_after_write_reason_ = CloseReason::kShutdown;  // kClosingAfterWrite's
  Connection client_;
  std::unique_ptr<Connection> upstream_;  // set once dialed and answered
  std::unique_ptr<Dialer> dialer_;  // released once it reported closed
  InFlightQueue in_flight_;
  SaslFraming sasl_;
  BrokerBridging bridging_;
  std::string upstream_name_;
  PartialFrameClock partial_;  // the client's frame in progress, if any
  FlowControl flow_;
  RequestPath requests_;
  RequestStream request_stream_;  // a large Produce forwarded while it arrives
  ResponsePath responses_;
  std::unique_ptr<SaslLogin> own_login_;  // epochgate's login on the upstream, under way
  std::unique_ptr<ScramDerivation> own_derivation_;  // its salted password, off the loop
  int32_t own_correlation_ = 0x45470100;  // epochgate's own ids, never a client's
  uint64_t own_relogin_at_ns_ = 0;        // 0: no session lifetime
  bool own_logged_in_ = false;
  bool sasl_resume_client_ = false;  // a SASL answer may have released held client frames
  uv_timer_t address_timer_;
  uv_timer_t hold_timer_;
  uv_timer_t write_deadline_timer_;
  std::vector<config::HostPort> targets_;
  std::atomic<uint32_t>* counter_ = nullptr;
  // client, three timers, dialer; +1 once the upstream is handed over
  int open_handles_ = 5;
  bool draining_ = false;
  bool client_eof_ = false;  // the client's end of stream was read; see on_client_eof()
  // A FIN was seen (read, or in TCP_INFO while reads were paused): answers
  // still owed past this close the session. 0: none seen.
  uint64_t eof_deadline_ns_ = 0;
  // After the client's end of stream, everything answered: the broker was
  // sent epochgate's end of stream, and its own ends the session.
  bool upstream_shut_ = false;
  bool processing_client_ = false;  // re-entry guard of process_client_input()
  uint64_t waiting_for_node_since_ns_ = 0;
  uint64_t last_activity_ns_ = 0;
};

/// Intrusive list of one worker's sessions, for draining and timeouts.
class SessionList {
 public:
  void add(Session* s);
  void remove(Session* s);
  /// Live sessions; readable from any thread (drain progress).
  size_t size() const { return size_.load(); }
  /// Sessions removed (freed) since the list was made; worker thread only.
  uint64_t removed() const { return removed_; }
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
  uint64_t removed_ = 0;
};

}  // namespace epochgate::proxy
