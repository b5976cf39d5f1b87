// policy/reroute_order_guard.h: keeps one producer's writes to one partition
// in the order the client sent them while epochgate reroutes some of them to
// the partition's new leader. It answers two questions: "may this partition
// of this request be rerouted now?" and "must this request, forwarded on the
// path the client chose, wait until earlier rerouted writes are answered?",
// and bounds how many reroutes and parked writes exist at once. A pure unit:
// the caller reports what was sent and what came back; the writes that must
// wait are kept back by their session (parked here) and offered again.
// Must never: do I/O, read a clock, keep or release a write itself, or let a
// write go before every rerouted write that arrived before it is answered.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace epochgate::policy {

/// Arrival order of a Produce request at the guard (one per request, taken
/// when its first frame is read). Larger is later.
using Ticket = uint64_t;

/// One producer's writes to one partition: the unit whose order matters.
/// Idempotent and transactional producers are told apart by the producer id
/// of their record batches (codec/record_batch.h), which is the identity the
/// leader checks sequences against; any other producer by `client` (the
/// caller's choice: client address and client id), which may merge unrelated
/// producers and then only costs them waiting, never order.
struct StreamKey {
  int64_t producer_id = -1;  ///< >= 0: idempotent; then `client` is ignored
  std::string client;
  std::string topic;         ///< topic name, or the topic id in text (Produce v13+)
  int32_t partition = -1;

  bool operator==(const StreamKey& o) const {
    return producer_id == o.producer_id && (producer_id >= 0 || client == o.client) &&
           topic == o.topic && partition == o.partition;
  }
};

struct StreamKeyHash {
  size_t operator()(const StreamKey& k) const;
};

/// Why a partition is not rerouted. Names are the `reason` label values of
/// `epochgate_reroutes_total{api,result="fell_back",reason}`; the set is fixed.
enum class RerouteRefusal : uint8_t {
  kNone = 0,
  kEarlierInFlight,  ///< an earlier write of the stream is unanswered on the client's path
  kLaterInFlight,    ///< a later write of the stream is already on the client's path
  kEarlierHeld,      ///< an earlier write of the stream waits to be forwarded
  kStreamFellBack,   ///< a write of the stream fell back and the client has not moved yet
  kMaxInFlight,      ///< reroute.max_in_flight rerouted and parked writes exist (or the
                     ///< table of streams that fell back is full)
  kHoldFull,         ///< it had to wait for an earlier write, but reroute.max_in_flight
                     ///< rerouted and parked writes left no room to park it
};
inline constexpr size_t kRerouteRefusalCount = 7;
const char* reroute_refusal_name(RerouteRefusal r);

/// Why a write must wait before it goes (must_wait, reroute_must_wait).
enum class OrderWait : uint8_t {
  kNone = 0,
  kClientPath,  ///< behind an earlier write on the client's path, or parked: the
                ///< caller bounds this wait (reroute.max_hold_ms)
  kRerouted,    ///< behind a rerouted write: until its answer (the reroute's timeout)
};

/// Counters the caller exports as metrics.
struct OrderGuardCounters {
  uint64_t rerouted = 0;  ///< begin_reroute calls that were allowed
  uint64_t refused[kRerouteRefusalCount] = {};  ///< by RerouteRefusal (index 0 unused)
  uint64_t held = 0;       ///< writes parked for order (park calls that parked)
  uint64_t hold_full = 0;  ///< writes that had to wait but found no room
};

/// The guard of one worker. Callers report every partition write of a
/// rerouting-enabled topic: on the client's own path (forward/direct_answered)
/// or rerouted (begin_reroute/reroute_answered). Not thread-safe.
class RerouteOrderGuard {
 public:
  /// `max_in_flight` bounds rerouted and parked writes together
  /// (`reroute.max_in_flight`); 0 refuses every reroute. Streams that fell
  /// back are remembered apart, up to a fixed 65536; past that every reroute
  /// is refused until they drain.
  explicit RerouteOrderGuard(size_t max_in_flight) : max_in_flight_(max_in_flight) {}
  /// A reloaded `reroute.max_in_flight`: applies to the next decisions
  /// (writes already counted stay until they end).
  void set_max_in_flight(size_t n) { max_in_flight_ = n; }

  /// The next arrival ticket (call once per Produce request, in the order
  /// requests are read from clients).
  Ticket arrive() { return ++last_ticket_; }

  /// May `stream`'s write of request `t` go to the new leader now? Only when
  /// no other write of the stream is unanswered on the client's own path
  /// (an earlier one would be overtaken; a later one is already ahead of it),
  /// none that arrived earlier waits to be forwarded, no write of the stream
  /// fell back since the client last moved (the client will resend those, and
  /// this one must not overtake them), and the bound leaves room. Earlier
  /// rerouted writes do not prevent it: reroutes of one stream are sent in
  /// ticket order on one upstream connection, so they stay in order. When
  /// `t` was itself on the client's path (the broker answered
  /// NOT_LEADER_OR_FOLLOWER), call direct_answered for it first.
  /// `from_node` >= 0: the write was on the client's path to that broker,
  /// which answered NOT_LEADER_OR_FOLLOWER; later writes of the stream still
  /// in flight to that same broker do not refuse it (they will be refused
  /// the same way and rerouted after it, on the same connection).
  RerouteRefusal may_reroute(Ticket t, const StreamKey& stream, int32_t from_node = -1) const;

  /// may_reroute, and when allowed records the write as rerouted to node
  /// `new_leader`. A refusal is counted by reason, and from then on the
  /// stream falls back until a write of it is forwarded to `new_leader`
  /// on the client's own path (forward with that node): the client moved.
  RerouteRefusal begin_reroute(Ticket t, const StreamKey& stream, int32_t new_leader);

  /// The rerouted write (t, stream) was answered, or failed for good: it no
  /// longer counts against the bound, and writes that waited behind it may
  /// go when their sessions offer them again (must_wait says so).
  void reroute_answered(Ticket t, const StreamKey& stream);

  /// A write of request `t` is forwarded now on the client's own path, to
  /// node `node` (the broker its listener stands for): recorded as in flight
  /// there until direct_answered. The caller asked must_wait first (a write
  /// that must wait is parked by its session, never forwarded). Clears the
  /// stream's fell-back state when `node` is the leader the refused reroute
  /// was aimed at.
  void forward(Ticket t, const StreamKey& stream, int32_t node);

  /// The ticket the next arrive() will return (a request that is not yet
  /// counted asks with it).
  Ticket next_ticket() const { return last_ticket_ + 1; }

  /// Non-kNone when the write (t, stream), forwarded on the client's own path to
  /// node `node`, must wait: a write of the stream is rerouted and
  /// unanswered, one that arrived earlier is parked, or one is
  /// unanswered on the client's path to another node (the broker that lost
  /// the partition: its NOT_LEADER_OR_FOLLOWER answer will be rerouted, and
  /// this write must not be stored before it). A caller that keeps the
  /// request itself (re-offering it later) asks this instead of forward().
  OrderWait must_wait(Ticket t, const StreamKey& stream, int32_t node) const;

  /// Non-kNone when the write (t, stream), which epochgate would reroute to
  /// `leader` by its own decision, must first wait: an earlier write of the
  /// stream is unanswered on the client's path (its answer may itself be
  /// rerouted: this one goes after it), an earlier one is parked,
  /// or one is rerouted to another leader (another connection: no order
  /// between the two). kNone when the stream falls back (waiting would not
  /// change the refusal).
  OrderWait reroute_must_wait(Ticket t, const StreamKey& stream, int32_t leader) const;

  /// Records the write (t, stream), kept back by its session (re-offered
  /// until must_wait/reroute_must_wait say no), as parked: it counts
  /// against max_in_flight and later writes of the stream wait behind it.
  /// kHoldFull (counted) when there is no room; kNone when parked or
  /// already parked.
  RerouteRefusal park(Ticket t, const StreamKey& stream);
  /// Forgets the parked write (t, stream): it goes now, or its session
  /// closed. Releases nothing (parked writes are re-offered by their session).
  void unpark(Ticket t, const StreamKey& stream);

  /// begin_reroute for a write that was on the client's path and came back
  /// NOT_LEADER_OR_FOLLOWER: ends its direct write (t, stream) and decides
  /// the reroute in one step, so what is known of later writes of the
  /// stream (still in flight or already sent) is not forgotten in between.
  /// `later_pending` (if given) is set when later writes of the stream are
  /// still in flight to the same broker: the reroute may then take no
  /// further hop (should leadership come back to that broker, they would be
  /// stored first).
  RerouteRefusal reroute_answered_direct(Ticket t, const StreamKey& stream, int32_t new_leader,
                                         bool* later_pending = nullptr);

  /// The write (t, stream) sent on the client's path was answered (whatever
  /// the error) or its connection closed.
  void direct_answered(Ticket t, const StreamKey& stream);

  /// The rerouted write (t, stream) goes on to `new_leader` (its first
  /// leader answered NOT_LEADER_OR_FOLLOWER): it stays rerouted, now to
  /// that node; -1 while it waits for a refresh to name one, when a later
  /// write of the stream waits behind it whatever its leader. False when
  /// no such write is rerouted.
  bool rehop(Ticket t, const StreamKey& stream, int32_t new_leader);

  /// True when a write of `stream` later than `t` is rerouted to `leader`
  /// now: it went out behind `t` on the same connection, so a resend of `t`
  /// to that leader would be stored after it.
  bool later_rerouted_to(Ticket t, const StreamKey& stream, int32_t leader) const {
    return rerouted_to_after(t, stream, leader) > 0;
  }
  /// How many writes of `stream` later than `t` are rerouted to `leader` now.
  size_t rerouted_to_after(Ticket t, const StreamKey& stream, int32_t leader) const;

  /// Rerouted plus parked writes now (what max_in_flight bounds).
  size_t in_flight() const { return bounded_; }
  /// Streams falling back now (a refused reroute, client not moved yet).
  size_t fell_back_streams() const { return fell_back_streams_; }
  /// Parked writes now.
  size_t held() const;
  /// Streams with any write tracked (for tests and /debug).
  size_t streams() const { return streams_.size(); }
  const OrderGuardCounters& counters() const { return counters_; }

 private:
  // kParked: its session keeps it and re-offers it.
  enum class Kind : uint8_t { kDirect, kRerouted, kParked };
  struct Entry {
    Ticket ticket;
    Kind kind;
    int32_t node = -1;  ///< kDirect: the broker; kRerouted: the leader
  };
  static constexpr int32_t kNoFallBack = -2;
  // Entries of one stream in ticket order (few: a client's in-flight limit),
  // and the node a refused reroute was aimed at while the stream falls back.
  // `newest_direct`: per broker, the latest ticket forwarded on the
  // client's path to it; a write answered NOT_LEADER_OR_FOLLOWER by another
  // broker with an older ticket may not be rerouted after it, even once that
  // later write is answered. Few brokers per stream (a move or two).
  struct Stream {
    std::deque<Entry> entries;
    int32_t fell_back_to = kNoFallBack;
    std::vector<std::pair<int32_t, Ticket>> newest_direct;
  };
  RerouteRefusal begin_reroute_from(Ticket t, const StreamKey& stream, int32_t new_leader,
                                    int32_t from_node);

  static void insert(Stream& st, Entry e);
  static bool erase(Stream& st, Ticket t, Kind kind);
  void forget_if_idle(const StreamKey& key);

  // Streams remembered as falling back cost a map entry each until their
  // client moves; past this many the guard stops rerouting altogether.
  static constexpr size_t kMaxFellBackStreams = 65536;

  size_t max_in_flight_;
  size_t bounded_ = 0;
  size_t fell_back_streams_ = 0;
  bool saturated_ = false;
  Ticket last_ticket_ = 0;
  std::unordered_map<StreamKey, Stream, StreamKeyHash> streams_;
  OrderGuardCounters counters_;
};

}  // namespace epochgate::policy
