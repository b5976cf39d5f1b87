// proxy/fencing/decision_lease.h: the fencing decision of one request, lent
// from a per-thread slot so its vectors keep their capacity from one request
// to the next (a fresh policy::RequestDecision allocated and freed two to
// three vectors per Produce).
#pragma once

#include <cstddef>
#include <optional>

#include "policy/decision.h"

namespace epochgate::proxy {

/// Lends the calling thread's reused policy::RequestDecision for the lease's
/// lifetime (policy::decide() clears it first). A nested lease on the same
/// thread gets a fresh decision of its own. Capacity above
/// kKeptDecisionEntries entries is given back when the lease ends, so one
/// huge request does not pin its memory for the worker's life.
class DecisionLease {
 public:
  DecisionLease() : leased_(!busy()), d_(leased_ ? reused() : nested_.emplace()) {
    if (leased_) busy() = true;
  }
  ~DecisionLease() {
    if (!leased_) return;
    if (d_.partitions.capacity() > kKeptDecisionEntries ||
        d_.topic_start.capacity() > kKeptDecisionEntries ||
        d_.urgent_refresh.capacity() > kKeptDecisionEntries)
      d_ = policy::RequestDecision{};
    busy() = false;
  }
  DecisionLease(const DecisionLease&) = delete;
  DecisionLease& operator=(const DecisionLease&) = delete;

  /// The decision to fill; valid until the lease ends (may be moved from).
  policy::RequestDecision& get() { return d_; }

  /// Entries (partitions, topics, urgent refreshes) a kept decision may hold room for.
  static constexpr std::size_t kKeptDecisionEntries = 1024;

 private:
  static policy::RequestDecision& reused() {
    thread_local policy::RequestDecision d;
    return d;
  }
  static bool& busy() {
    thread_local bool b = false;
    return b;
  }
  bool leased_;
  /// A nested lease's own decision; empty (nothing built) for the usual one.
  std::optional<policy::RequestDecision> nested_;
  policy::RequestDecision& d_;
};

}  // namespace epochgate::proxy
