// metrics/stream_metrics.cc
#include "metrics/stream_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

#include <string>

namespace epochgate::metrics {

StreamMetrics::StreamMetrics(prometheus::Registry& r) {
  streamed_ = &prometheus::BuildCounter()
                   .Name("epochgate_responses_streamed_total")
                   .Help("Fetch responses relayed to the client as their bytes arrived, "
                         "instead of being read whole first (limits.stream_fetch_min_bytes).")
                   .Register(r)
                   .Add({{"api", "fetch"}});
  bytes_ = &prometheus::BuildCounter()
                .Name("epochgate_streamed_bytes_total")
                .Help("Bytes of the Fetch responses relayed as they arrived (size prefix included).")
                .Register(r)
                .Add({});
  auto& family = prometheus::BuildCounter()
                     .Name("epochgate_stream_tail_total")
                     .Help("Streamed Fetch responses whose rewrite had to keep the broker's "
                           "length: padded (an unknown tagged field fills a shorter "
                           "NodeEndpoints), endpoints_dropped (NodeEndpoints entries left out, "
                           "their CurrentLeader kept), hint_not_backfilled (a leader error "
                           "without CurrentLeader the view could have hinted).")
                     .Register(r);
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
