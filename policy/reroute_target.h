// policy/reroute_target.h: which partitions of a decided Produce request
// epochgate delivers to their leader itself instead of answering
// NOT_LEADER_OR_FOLLOWER (docs/rerouting.md, "Where the decision sits"),
// and where to. Pure: reads the decision, the topic rules and the view.
// Must never pick a partition the policy did not fence as not-leader in
// enforce mode, or a target the view does not name as leader with an epoch.
#pragma once

#include <cstdint>
#include <vector>

#include "codec/messages/produce_request.h"
#include "policy/decision.h"
#include "policy/metadata_snapshot.h"
#include "policy/mode_resolver.h"

namespace epochgate::policy {

/// One partition to reroute.
struct RerouteTarget {
  uint32_t topic_index = 0;      ///< index in the request's topic array
  uint32_t partition_index = 0;  ///< index in that topic's partition array
  int32_t partition = 0;
  int32_t leader = -1;        ///< node id the view names as leader
  int32_t leader_epoch = -1;  ///< that leader's epoch in the view
};

/// The result of reroute_targets().
struct RerouteTargets {
  std::vector<RerouteTarget> partitions;  ///< in request order
  /// Not-leader fences in observe mode on topics whose rule reroutes:
  /// what enforce mode would have rerouted (counted, never acted on).
  uint32_t observed = 0;
};

/// True when every topic of `req` has a rule with `reroute: true`. Such a
/// request is decided without holding for a refresh first: a not-leader
/// fence is rerouted, and the leader's answer is the check the refresh would
/// have been (a leader that is not one answers NOT_LEADER_OR_FOLLOWER, which
/// goes back to the client: one hop only).
bool all_topics_reroute(const codec::ProduceRequest& req, int16_t version,
                        const ModeResolver& modes, const MetadataSnapshot& view);

/// Partitions of `req` (Produce `version`, decided into `d` on the listener
/// of `node_id`) fenced as not-leader in enforce mode on topics whose rule
/// has `reroute: true`, each with the view's leader (the decision's hint).
/// A partition without a hint (the view knows no leader with an epoch) or
/// whose leader is `node_id` itself is left out: it falls back.
RerouteTargets reroute_targets(const codec::ProduceRequest& req, int16_t version,
                               const RequestDecision& d, const ModeResolver& modes,
                               const MetadataSnapshot& view, int32_t node_id);

}  // namespace epochgate::policy
