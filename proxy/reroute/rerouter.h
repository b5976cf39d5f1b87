// proxy/reroute/rerouter.h: one worker's rerouting of Produce partitions to their
// leader (docs/rerouting.md): its internal clients (one per leader, on
// epochgate's own connections), its order guard (one producer's writes to
// one partition stay in order), and the metrics of both. Sends only what a
// ReroutePlan names, each partition at most once (one hop), with the
// client's version, acks, transactional id and client id, and its record
// bytes as the client sent them. Loop thread only; never blocks; every send
// has a timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "policy/reroute_order_guard.h"
#include "proxy/client/broker_client.h"
#include "proxy/client/kafka_client_pool.h"
#include "proxy/core/reroute_owner.h"
#include "proxy/core/reroute_plan.h"
#include "proxy/core/reroute_state.h"
#include "proxy/core/worker_context.h"
#include "proxy/reroute/reroute_poster.h"

namespace epochgate::proxy {

struct InFlightRequest;

/// Rerouting for the sessions of one worker.
class Rerouter : public RerouteOwner {
 public:
  /// Sends over `clients` (one per leader; not owned, outlives this), or,
  /// when null, over a KafkaClientPool of its own on ctx.loop.
  explicit Rerouter(WorkerContext& ctx, BrokerClients* clients = nullptr);
  ~Rerouter();
  Rerouter(const Rerouter&) = delete;
  Rerouter& operator=(const Rerouter&) = delete;

  /// Sends the targets of `plan` for request `e` (acks != 0) to their
  /// leaders: one part of `e` per leader, `e.reroute` set. A target that
  /// cannot go (`refuse` set for all: an identity reason; the order guard;
  /// no connection; a refused send) keeps its local answer and is counted
  /// with its reason. `ticket`/`peer` identify the request to the guard.
  /// Partitions forwarded on the client's path are recorded as in flight
  /// there (with `ticket`) when `e` expects a response.
  void start(InFlightRequest& e, std::shared_ptr<ReroutePlan> plan,
             const std::shared_ptr<RerouteSink>& sink, policy::Ticket ticket,
             const char* refuse);
  /// How request `t` (its plan `plan`) must wait for order before it goes:
  /// the strongest wait of its streams (proxy/reroute/rerouter_order.cc). A
  /// forwarded partition waits behind a rerouted write of its stream, or an
  /// earlier one on the client's path to another broker; a partition
  /// epochgate would reroute (`reroutes`: no identity refusal) waits behind
  /// an earlier write on the client's path or a reroute to another leader.
  /// The caller keeps the request and offers it again.
  policy::OrderWait order_wait(const ReroutePlan& plan, policy::Ticket t, bool reroutes) const;
  /// Parks the waiting streams of `plan` under `t` in the guard (they count
  /// against reroute.max_in_flight, later writes wait behind them) and
  /// appends them to `parked`. False when a partition to reroute found no
  /// room (`hold_full`: it may not wait; a forwarded one waits unparked).
  bool park(const ReroutePlan& plan, policy::Ticket t, bool reroutes,
            std::vector<policy::StreamKey>& parked);
  /// Forgets what park() recorded (the request goes now, or its session
  /// closed) and clears `parked`.
  void unpark(policy::Ticket t, std::vector<policy::StreamKey>& parked);
  /// The session of `sink` keeps a request back for order: its `reoffer`
  /// runs at the next change of the guard (an answer, a reroute, a release).
  void wait_for_order(const std::shared_ptr<RerouteSink>& sink);
  /// The broker answered the writes `st` forwarded on the client's path
  /// (or their connection closed). Idempotent.
  void direct_answered(RerouteState& st) override;
  /// The same for every write of `st` but the streams `waiting` (indexes in
  /// st.plan->streams), which stay in flight on the client's path.
  void direct_answered_except(RerouteState& st, const std::vector<size_t>& waiting);
  /// The broker answered `e` (its frame, at the client's version, is in
  /// e.response): partitions it answered NOT_LEADER_OR_FOLLOWER go to the
  /// leader the view names now (learned from the answer), or wait up to
  /// reroute.max_wait_ms for an urgent refresh to name one. Adds parts to
  /// `e` for what it started; the response waits for them.
  void after_broker_answer(InFlightRequest& e);
  /// acks=0: posts every target on the worker's post connections
  /// (proxy/reroute/reroute_poster.h), nothing tracked. True when all were
  /// accepted by their leader's client (the client need not be closed).
  bool post_all(const std::shared_ptr<ReroutePlan>& plan, const char* refuse);
  /// The view learned a metadata refresh: writes waiting for their leader
  /// (after_broker_answer) are looked at now instead of at the next poll.
  void view_changed();
  /// Closes the internal clients; their requests fail with kClosed.
  void close(std::function<void()> done);

  policy::RerouteOrderGuard& guard() { return guard_; }
  /// Whether rerouting is on at all (reroute.max_in_flight > 0).
  bool enabled() const;

 private:
  void on_answer(const std::shared_ptr<RerouteState>& st, size_t leg,
                 ClientResult<codec::ProduceResponse>&& r);
  /// Groups `targets` (indexes in st->plan->targets) by leader and sends
  /// one request per leader, adding a part to the entry for each.
  /// `reuse_part` >= 0: the one leg answers that part of `e` (a held
  /// target's), instead of a new one.
  void send_legs(const std::shared_ptr<RerouteState>& st, InFlightRequest& e,
                 const std::vector<size_t>& targets, int reuse_part = -1);
  /// Streams `idx` of `st` (answered NOT_LEADER_OR_FOLLOWER by their broker)
  /// to `leader` each; returns the targets it made.
  std::vector<size_t> retarget(RerouteState& st, const std::vector<std::pair<size_t, int32_t>>& picks);
  /// The view's leader for stream `i` of `st`, if it is not the broker that
  /// refused it.
  int32_t new_leader(const RerouteState& st, size_t i, bool refresh);
  static void on_wait_timer(uv_timer_t* t);
  /// Targets `idx` of `st` were refused NOT_LEADER_OR_FOLLOWER by the
  /// leader of their first hop: each goes on to the leader the view names
  /// with a newer epoch, now or within reroute.max_wait_ms of an urgent
  /// refresh, or falls back (`second_hop`). `alive`: the request can still
  /// take an answer (else they fall back at once). proxy/reroute/rerouter_wait.cc.
  void rehop(const std::shared_ptr<RerouteState>& st, const std::vector<size_t>& idx, bool alive);
  /// The view's leader for target `t` of `st` when it is newer than the one
  /// it was sent to; -1 otherwise.
  int32_t newer_leader(const RerouteState& st, size_t t, bool refresh, int32_t& epoch);
  /// Moves target `t` to `leader` (the guard too); part of a rehop.
  void move_target(RerouteState& st, size_t t, int32_t leader, int32_t epoch);
  /// Looks at the states waiting for a rehop's leader (the poll, a refresh).
  void check_rehops();
  /// Adds CurrentLeader (the view's epoch) and a NodeEndpoints entry for
  /// `leader` (epochgate's listener) to a partition `leader` accepted, when
  /// the view agrees it leads and the client speaks Produce v10+.
  void tell_new_leader(RerouteState& st, int32_t leader, const RerouteTargetPart& tp,
                       codec::ProduceResponse::PartitionProduceResponse& part);
  void check_waiting();
  /// One stream's writes a leader refused across its own takeover: the
  /// first NOT_LEADER_OR_FOLLOWER (it had not applied the election yet), the
  /// ones rerouted behind it OUT_OF_ORDER_SEQUENCE_NUMBER (it had by then:
  /// a sequence gap) or NOT_LEADER_OR_FOLLOWER. None was stored; they are
  /// held to go again together (proxy/reroute/rerouter_gap.cc).
  struct SequenceGap {
    struct Member {
      std::shared_ptr<RerouteState> st;  // kept until the gap settles
      size_t target = 0;                 // index in st->plan->targets
      int part = -1;                     // the entry's part it holds open
      /// The leader's refusal when it was not NOT_LEADER_OR_FOLLOWER: what
      /// the client gets should the gap fall back.
      std::optional<RerouteState::PartitionAnswer> answer;
    };
    policy::StreamKey key;
    int32_t leader = -1;        // the broker that refused them
    int32_t epoch = -1;         // the view's epoch the first was sent under
    policy::Ticket first = 0;   // the first refused write's ticket
    std::vector<Member> members;  // in the order their refusals came
    uint64_t until_ns = 0;      // reroute.max_hold_ms from the first refusal
    /// A member came back OUT_OF_ORDER_SEQUENCE_NUMBER: only a leader checks
    /// sequences, so `leader` has taken over since the first refusal.
    bool proven = false;
    /// Why it may not be resent, once known: "stored" (a later write of
    /// the stream at `leader` was, or may have been, stored: another answer,
    /// or its request failed), "closed" (one's session closed).
    const char* spoiled = nullptr;
    bool refreshed = false;  // an urgent refresh was asked for it
  };
  /// Holds target `t` of `st`, answered `part` by `leader`, in its
  /// stream's sequence gap (opening one for a first refusal); true when
  /// held. A later answer that shows something was stored marks the gap.
  bool gap_hold(const std::shared_ptr<RerouteState>& st, int32_t leader, int leg_part, size_t t,
                RerouteState::PartitionAnswer& part);
  /// The same stream's later write at `leader` failed without an answer.
  void gap_failed(const RerouteState& st, int32_t leader, size_t t);
  /// Settles every gap that is complete (resent), spoiled or out of time
  /// (fallen back: the answers as they came).
  void check_gaps();
  /// Why `g` settles now ("resent", "one_more_hop" or a fall-back
  /// outcome), or nullptr. `to` and `epoch`: the leader the run goes to and
  /// the view's epoch for it, when it goes again ("resent": the refusing
  /// broker, which now leads; "one_more_hop": a leader the view names at a
  /// strictly newer epoch than the first write went under).
  const char* gap_outcome(SequenceGap& g, uint64_t now, int32_t& to, int32_t& epoch);
  /// True when every member of `g` is a refusal on its first hop.
  static bool first_hops(const SequenceGap& g);
  /// Sends `g`'s members again to `to` in their order ("resent" or
  /// "one_more_hop", under `epoch`) or gives each its answer as it came;
  /// counts the outcome.
  void settle_gap(SequenceGap& g, const char* outcome, int32_t to, int32_t epoch);
  /// The worker stops: every held gap falls back ("closed").
  void close_gaps();
  /// The leader's client, or nullptr (address unknown, pool full or closed).
  BrokerClient* client_for(int32_t leader);
  void fell_back(const char* reason, size_t n = 1);
  void report();
  /// Runs every waiting session's reoffer (once each) and forgets them.
  void wake_order_waiters();

  WorkerContext& ctx_;
  std::unique_ptr<KafkaClientPool> own_clients_;  // set when none was handed in
  BrokerClients& clients_;
  policy::RerouteOrderGuard guard_;
  ReroutePoster poster_;  // acks=0 posts, on connections of their own
  uv_timer_t wait_timer_;  // polls the view for states waiting for a leader
  std::vector<std::weak_ptr<RerouteState>> waiting_;
  std::vector<std::weak_ptr<RerouteSink>> order_waiters_;
  std::vector<std::weak_ptr<RerouteState>> rehops_;  // waiting for a rehop's leader
  std::vector<SequenceGap> gaps_;  // at most one per stream and leader
  bool closed_ = false;
};

}  // namespace epochgate::proxy
