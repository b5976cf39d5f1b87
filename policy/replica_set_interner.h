// policy/replica_set_interner.h: one shared ReplicaSet per distinct
// (replicas, ISR) pair within one learn call. A cluster of 100,000
// partitions on a few brokers has only a handful of distinct replica lists,
// so partitions share them instead of each holding its own two vectors (that
// was most of the view's memory per partition). Must never: hand out a set
// whose lists differ from the ones asked for, or mutate a set once handed out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "policy/metadata_snapshot.h"

namespace epochgate::policy {

/// Deduplicates ReplicaSets by content for the lifetime of the interner.
class ReplicaSetInterner {
 public:
  /// The shared set holding exactly `replicas` and `isr` (created on first use).
  std::shared_ptr<const ReplicaSet> get(const std::vector<int32_t>& replicas,
                                        const std::vector<int32_t>& isr);
  /// Distinct sets handed out so far.
  size_t distinct() const { return count_; }

 private:
  // Buckets by hash of both lists; a bucket's sets are compared in full.
  std::unordered_map<size_t, std::vector<std::shared_ptr<const ReplicaSet>>> buckets_;
  size_t count_ = 0;
};

}  // namespace epochgate::policy
