// metrics/stream_metrics.cc
#include "metrics/stream_metrics.h"

#include "metrics/families.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <string>

namespace epochgate::metrics {

namespace {
size_t index(Direction d) { return d == Direction::kClientToUpstream ? 0 : 1; }
}  // namespace

StreamMetrics::StreamMetrics(prometheus::Registry& r) {
  streamed_ = &register_family<FamilyId::responses_streamed_total>(r)
                   .Add({{"api", "fetch"}});
  bytes_ = &register_family<FamilyId::streamed_bytes_total>(r).Add({});
  auto& family = register_family<FamilyId::stream_tail_total>(r);
  for (size_t i = 0; i < kStreamTailReasons.size(); ++i)
    tail_[i] = &family.Add({{"reason", std::string(kStreamTailReasons[i])}});
  auto& spliced = register_family<FamilyId::spliced_bytes_total>(r);
  auto& fallbacks = register_family<FamilyId::splice_fallbacks_total>(r);
  for (Direction d : {Direction::kClientToUpstream, Direction::kUpstreamToClient}) {
    const std::string dir = direction_label(d);
    spliced_[index(d)] = &spliced.Add({{"direction", dir}});
    for (size_t i = 0; i < kSpliceFallbackReasons.size(); ++i) {
      const std::string_view reason = kSpliceFallbackReasons[i];
      // A full destination is the client's only for Fetch, the broker's only for Produce.
      if (reason == (d == Direction::kClientToUpstream ? "client_full" : "upstream_full")) continue;
      fallbacks_[index(d)][i] = &fallbacks.Add({{"direction", dir}, {"reason", std::string(reason)}});
    }
  }
}

StreamMetrics::~StreamMetrics() = default;

void StreamMetrics::streamed() { streamed_->Increment(); }

void StreamMetrics::streamed_bytes(uint64_t n) { bytes_->Increment(static_cast<double>(n)); }

void StreamMetrics::tail(std::string_view reason, uint64_t n) {
  for (size_t i = 0; i < kStreamTailReasons.size(); ++i)
    if (kStreamTailReasons[i] == reason) tail_[i]->Increment(static_cast<double>(n));
}

void StreamMetrics::spliced(Direction d, uint64_t n) {
  spliced_[index(d)]->Increment(static_cast<double>(n));
}

void StreamMetrics::splice_fallback(Direction d, std::string_view reason) {
  for (size_t i = 0; i < kSpliceFallbackReasons.size(); ++i)
    if (kSpliceFallbackReasons[i] == reason && fallbacks_[index(d)][i] != nullptr)
      fallbacks_[index(d)][i]->Increment();
}

}  // namespace epochgate::metrics
