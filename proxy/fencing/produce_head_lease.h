// proxy/fencing/produce_head_lease.h: a Produce's decided fields
// (codec::ProduceHead), lent from a per-thread slot so their vectors keep
// their room from one request to the next, as DecisionLease does for the
// decision.
#pragma once

#include <optional>

#include "codec/produce_head.h"

namespace epochgate::proxy {

/// Lends the calling thread's reused codec::ProduceHead for the lease's
/// lifetime (ProduceHead::read() clears it first). A nested lease on the
/// same thread gets a fresh one of its own. Room above
/// ProduceHead::kKeptEntries entries is given back when the lease ends, so
/// one huge request does not pin its memory for the worker's life.
class ProduceHeadLease {
 public:
  ProduceHeadLease() : leased_(!busy()), h_(leased_ ? reused() : nested_.emplace()) {
    if (leased_) busy() = true;
  }
  ~ProduceHeadLease() {
    if (!leased_) return;
    h_.trim();
    busy() = false;
  }
  ProduceHeadLease(const ProduceHeadLease&) = delete;
  ProduceHeadLease& operator=(const ProduceHeadLease&) = delete;

  /// The head to read into; valid until the lease ends.
  codec::ProduceHead& get() { return h_; }

 private:
  static codec::ProduceHead& reused() {
    thread_local codec::ProduceHead h;
    return h;
  }
  static bool& busy() {
    thread_local bool b = false;
    return b;
  }
  bool leased_;
  /// A nested lease's own head; empty (nothing built) for the usual one.
  std::optional<codec::ProduceHead> nested_;
  codec::ProduceHead& h_;
};

}  // namespace epochgate::proxy
