// proxy/core/reroute_plan.h: what the policy hands a session for a Produce
// request on a rerouting topic (docs/rerouting.md): the partitions to send
// to their leader (with their own copy of the record bytes, never changed),
// and the stream (producer and partition) of every partition of those
// topics, for the worker's order guard. Plain data built on any worker
// thread; owns no connection and sends nothing (proxy/reroute/rerouter.h sends).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codec/header.h"
#include "codec/messages/produce_request.h"
#include "codec/messages/produce_response.h"
#include "policy/decision.h"
#include "policy/mode_resolver.h"
#include "policy/reroute_order_guard.h"
#include "policy/reroute_target.h"
#include "proxy/net/buffer_budget.h"

namespace epochgate::proxy {

/// One partition of a rerouting topic in the client's request.
struct RerouteStream {
  policy::StreamKey key;  ///< `key.client` holds the client id; the session adds its peer
  int target = -1;        ///< index in ReroutePlan::targets; -1: forwarded on the client's path
  int32_t node = -1;      ///< the broker it is forwarded to (target -1)
  /// Forwarded (target -1) with acks != 0: index in ReroutePlan::spare, its
  /// record copy, should the broker answer NOT_LEADER_OR_FOLLOWER; -1: none.
  int spare = -1;
};

/// One partition epochgate would answer NOT_LEADER_OR_FOLLOWER and may
/// deliver to `leader` instead.
struct RerouteTargetPart {
  uint32_t topic_index = 0;
  std::string topic;  ///< name as the request spelled it (empty from v13)
  codec::Uuid topic_id{};
  int32_t partition = 0;
  int32_t leader = -1;
  int32_t leader_epoch = -1;  ///< the view's epoch for `leader` when chosen; -1 unknown
  /// 1: sent to the leader epochgate's view named; 2: that leader answered
  /// NOT_LEADER_OR_FOLLOWER and the view then named a newer one (the last hop).
  uint8_t hop = 1;
  /// Sent again with the rest of its sequence gap (Rerouter::check_gaps):
  /// never held for one a second time.
  bool gap_resent = false;
  size_t records_offset = 0;  ///< into ReroutePlan::records
  uint32_t records_size = 0;
  bool records_null = false;
  /// Empty: the batch header read; else why not (a `batch_*` fall-back).
  const char* batch_error = nullptr;
};

/// The rerouting part of one Produce request's plan.
struct ReroutePlan {
  int16_t version = 0;
  int16_t acks = 1;
  int32_t timeout_ms = 0;
  std::optional<std::string> transactional_id;
  std::string client_id;  ///< the client's own (quota identity of the rerouted write)
  std::vector<RerouteTargetPart> targets;  ///< request order
  std::vector<RerouteStream> streams;      ///< every partition of a rerouting topic
  /// Forwarded partitions, kept to reroute them if their broker answers
  /// NOT_LEADER_OR_FOLLOWER (leader -1 until then); moved to `targets` then.
  std::vector<RerouteTargetPart> spare;
  std::vector<uint8_t> records;            ///< the targets' record bytes, as sent
  uint32_t observed = 0;  ///< observe mode: not-leader fences it would have rerouted
  uint32_t fenced = 0;    ///< partitions the policy answers locally (targets among them)
  bool keyed = false;     ///< the session completed the stream keys (its peer)
  /// Set when no partition of the request may be rerouted, whatever the
  /// order guard says: "duplicate_partition" (a partition named twice) or
  /// "buffer_budget" (the record copies did not fit). No record was copied
  /// then; the fenced partitions keep their local answer.
  const char* refuse = nullptr;
  /// `records` counted against limits.buffer_budget_bytes while the plan lives.
  BudgetCharge charge;
  /// Every partition answered locally (the plan's frame is its encoding):
  /// that answer, decoded, for the leaders' answers to merge into
  /// (RerouteState::response) without decoding the frame again.
  std::optional<codec::ProduceResponse> local_answer;
  /// Set when the request stopped waiting for order without its wait being
  /// over ("hold_full", "hold_timeout"): a target the guard then refuses for
  /// an earlier write is counted under this reason.
  const char* wait_refusal = nullptr;

  /// The Produce request for `indexes` of targets (one leader), at the
  /// client's acks, timeout and transactional id; its record views point
  /// into `records`, so the plan must outlive it.
  codec::ProduceRequest request_for(const std::vector<size_t>& indexes) const;
};

/// Builds the plan for `req` (decided into `d`), or nullptr when no
/// partition is on a topic whose rule reroutes. `header` gives the client id.
/// The record copies are charged to `budget` (may be null); when that
/// passes its limit, or a partition of a rerouting topic is named twice,
/// nothing is copied and `refuse` says why.
std::shared_ptr<ReroutePlan> make_reroute_plan(const codec::ProduceRequest& req, int16_t version,
                                               const codec::RequestHeader& header,
                                               const policy::RequestDecision& d,
                                               const policy::ModeResolver& modes,
                                               const policy::MetadataSnapshot& view,
                                               int32_t node_id, BufferBudget* budget);

}  // namespace epochgate::proxy
