// metrics/stream_metrics.cc
#include "metrics/stream_metrics.h"

#include "metrics/families.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <string>

namespace epochgate::metrics {

StreamMetrics::StreamMetrics(prometheus::Registry& r) {
  streamed_ = &register_family<FamilyId::responses_streamed_total>(r)
                   .Add({{"api", "fetch"}});
  bytes_ = &register_family<FamilyId::streamed_bytes_total>(r).Add({});
  auto& family = register_family<FamilyId::stream_tail_total>(r);
  for (size_t i = 0; i < kStreamTailReasons.size(); ++i)
    tail_[i] = &family.Add({{"reason", std::string(kStreamTailReasons[i])}});
}

StreamMetrics::~StreamMetrics() = default;

void StreamMetrics::streamed() { streamed_->Increment(); }

void StreamMetrics::streamed_bytes(uint64_t n) { bytes_->Increment(static_cast<double>(n)); }

void StreamMetrics::tail(std::string_view reason, uint64_t n) {
  for (size_t i = 0; i < kStreamTailReasons.size(); ++i)
    if (kStreamTailReasons[i] == reason) tail_[i]->Increment(static_cast<double>(n));
}

}  // namespace epochgate::metrics
