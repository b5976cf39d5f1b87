// proxy/core/reroute_state.h: one client request's reroutes in progress: which
// of its partitions went to which leader, the leaders' answers as they
// arrive, and how they replace epochgate's own NOT_LEADER_OR_FOLLOWER
// answers in the response the client gets (its partition order kept).
// Shared between the request's in-flight entry and the internal client's
// callbacks, which may outlive the session: those reach the session only
// through RerouteSink, which the session's in-flight queue clears when it
// goes. No I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codec/header.h"
#include "codec/messages/produce_response.h"
#include "codec/types.h"
#include "policy/reroute_order_guard.h"
#include "proxy/core/reroute_owner.h"
#include "proxy/core/reroute_plan.h"

namespace epochgate::proxy {

struct InFlightRequest;

/// How a finished reroute reaches its session: `flush` writes the ready
/// responses at the head of the client order. `alive` false once the
/// session's in-flight requests are gone (their entries are freed).
/// `reoffer`: the order guard changed; a request the session keeps back
/// for order is offered again soon (never from inside this call).
struct RerouteSink {
  std::function<void()> flush;
  std::function<void()> reoffer;
  bool alive = true;
};

struct RerouteState {
  using PartitionAnswer = codec::ProduceResponse::PartitionProduceResponse;

  /// The request sent to one leader.
  struct Leg {
    int32_t leader = -1;
    std::vector<size_t> targets;  ///< indexes in plan->targets
    int part = -1;                ///< the entry's part it answers
  };

  std::shared_ptr<ReroutePlan> plan;
  std::vector<Leg> legs;
  /// Per target: the leader's answer that replaces epochgate's own; unset:
  /// the local answer (NOT_LEADER_OR_FOLLOWER plus hint) stays.
  std::vector<std::optional<PartitionAnswer>> answers;
  /// The leaders' NodeEndpoints, already rewritten to epochgate's listeners.
  std::vector<codec::ProduceResponse::NodeEndpoint> endpoints;
  /// The bytes the views in `answers` and `endpoints` (unknown tagged
  /// fields) point at: a leader's answer is decoded from its client's read
  /// buffer, which is reused once the answer's callback returns, long
  /// before the response is encoded. A deque: its strings never move.
  std::deque<std::string> kept_bytes;
  int32_t throttle_time_ms = 0;
  policy::Ticket ticket = 0;
  uint64_t started_ns = 0;
  InFlightRequest* entry = nullptr;  ///< valid while sink->alive
  std::weak_ptr<RerouteSink> sink;
  /// Streams of this request forwarded on the client's own path, until the
  /// broker answers them (or the request is dropped with its session).
  std::vector<policy::StreamKey> direct;
  RerouteOwner* owner = nullptr;  ///< outlives every state (the worker's Rerouter)
  /// Set when no partition of this request may be rerouted at all (an
  /// identity reason, Rerouter::start's `refuse`): a broker's later
  /// NOT_LEADER_OR_FOLLOWER falls back with it too.
  const char* refuse = nullptr;
  /// A broker answered NOT_LEADER_OR_FOLLOWER for these streams (indexes in
  /// plan->streams) and the view knows no newer leader yet: they wait for a
  /// refresh until `wait_until_ns`, holding part `wait_part` of the entry.
  std::vector<size_t> waiting;
  uint64_t wait_until_ns = 0;
  int wait_part = -1;
  /// Targets (indexes in plan->targets) whose leader answered
  /// NOT_LEADER_OR_FOLLOWER, waiting until `rehop_until_ns` for the view to
  /// name a newer leader for their one more hop, holding part `rehop_part`.
  std::vector<size_t> rehop_waiting;
  uint64_t rehop_until_ns = 0;
  int rehop_part = -1;
  /// A metadata refresh was learned while they waited: the view's leader
  /// may then be the refused one itself (the refusal came inside the move).
  bool rehop_refreshed = false;
  /// Parts (indexes in the entry) kept open by targets held in a sequence
  /// gap (Rerouter::check_gaps), once per held target: a leg's part stays
  /// unanswered while any of its targets is held.
  std::vector<int> gap_holds;
  bool holds(int part) const {
    for (int p : gap_holds)
      if (p == part) return true;
    return false;
  }
  /// Drops one hold of `part`; true when no other target holds it.
  bool release_hold(int part) {
    for (auto it = gap_holds.begin(); it != gap_holds.end(); ++it)
      if (*it == part) {
        gap_holds.erase(it);
        break;
      }
    return !holds(part);
  }
  /// The client's response, decoded, that the leaders' answers merge into:
  /// the broker's part as the response pipeline left it (learned from,
  /// addresses rewritten, merged with epochgate's own answers, backfilled),
  /// or the policy's local answer when every partition was fenced. Unset
  /// until one of them is in. Its byte views (unknown tagged fields) point
  /// into the entry's `response`, which keeps the bytes it was decoded from
  /// until finish_rerouted() encodes it.
  std::optional<codec::ProduceResponse> response;
  /// The header `response` is encoded with (the client's header version).
  codec::ResponseHeader response_header;
  /// Bytes the broker sent after the body, kept when it is encoded.
  codec::Bytes response_trailing;
  /// The pipeline changed `response` against the bytes kept: it is
  /// encoded even when no leader's answer merges.
  bool response_changed = false;

  RerouteState() = default;
  RerouteState(const RerouteState&) = delete;
  RerouteState& operator=(const RerouteState&) = delete;
  /// Reports still-open direct writes as answered: their connection closed.
  ~RerouteState();

  /// Copies the bytes of `p`'s unknown tagged fields (its own, its record
  /// errors' and its CurrentLeader's) into kept_bytes and points `p` at
  /// the copies, before `p` outlives the buffer it was decoded from.
  void keep_bytes(PartitionAnswer& p);
  /// The same for a leader's NodeEndpoints entry.
  void keep_bytes(codec::ProduceResponse::NodeEndpoint& n);

  /// Merge step of the response pipeline for the rerouted partitions:
  /// puts the leaders' answers in place of epochgate's own
  /// NOT_LEADER_OR_FOLLOWER answers in `m` (the client's response at its
  /// version, in the request's partition order), the larger throttle, and
  /// the leaders' NodeEndpoints not already there. Written over the
  /// generated PartitionShape<ProduceResponse>. False (nothing changed)
  /// when no leader's answer came.
  bool merge_answers(codec::ProduceResponse& m) const;
};

/// Called when a part of `e` (which has `e.reroute`) was answered: once
/// none is outstanding, the leaders' answers merge into the decoded
/// response (RerouteState::merge_answers), which is encoded once into
/// `e.response` (the kept bytes stay when nothing changed), and `e`
/// becomes ready. True when it did.
bool finish_rerouted(InFlightRequest& e);

}  // namespace epochgate::proxy
