// policy/replica_set_interner.cc
#include "policy/replica_set_interner.h"

namespace epochgate::policy {

namespace {
size_t hash_lists(const std::vector<int32_t>& replicas, const std::vector<int32_t>& isr) {
  size_t h = replicas.size() * 0x9e3779b97f4a7c15ull ^ isr.size();
  for (int32_t v : replicas) h = (h ^ static_cast<uint32_t>(v)) * 0x100000001b3ull;
  h ^= 0xff;  // separates the two lists ([1],[2,3] from [1,2],[3])
  for (int32_t v : isr) h = (h ^ static_cast<uint32_t>(v)) * 0x100000001b3ull;
  return h;
}
}  // namespace

std::shared_ptr<const ReplicaSet> ReplicaSetInterner::get(const std::vector<int32_t>& replicas,
                                                          const std::vector<int32_t>& isr) {
  auto& bucket = buckets_[hash_lists(replicas, isr)];
  for (const auto& rs : bucket) {
    if (rs->replicas == replicas && rs->isr == isr) return rs;
  }
  auto rs = std::make_shared<ReplicaSet>();
  rs->replicas = replicas;
  rs->isr = isr;
  bucket.push_back(rs);
  ++count_;
  return rs;
}

}  // namespace epochgate::policy
