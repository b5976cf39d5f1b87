// metrics/stream_metrics.h: the families of Fetch responses relayed to the
// client as they arrive (proxy/session/response_stream.h): how many were streamed,
// and what happened to a streamed response's top-level tagged fields, which
// must keep the broker's length. Labels are bounded (kStreamTailReasons).
// Thread-safe (prometheus-cpp atomics); no label maps on the data path.
#pragma once

#include <array>
#include <memory>
#include <string_view>

namespace prometheus {
class Counter;
class Registry;
}  // namespace prometheus

namespace epochgate::metrics {

/// Every `reason` of epochgate_stream_tail_total: the rewritten NodeEndpoints
/// was shorter and an unknown tagged field pads it to the broker's length
/// (KIP-482: clients skip unknown tags); endpoints that did not fit were left
/// out (their CurrentLeader ids and epochs stay); a partition's leader error
/// had no CurrentLeader and the view's hint could not be added.
inline constexpr std::array<std::string_view, 3> kStreamTailReasons = {
    "padded", "endpoints_dropped", "hint_not_backfilled"};

class StreamMetrics {
 public:
  explicit StreamMetrics(prometheus::Registry& registry);
  ~StreamMetrics();

  /// epochgate_responses_streamed_total{api="fetch"}: one response relayed as it arrived.
  void streamed();
  /// epochgate_streamed_bytes_total: bytes of streamed responses (size prefix included).
  void streamed_bytes(uint64_t n);
  /// epochgate_stream_tail_total{reason}; `n` events (endpoints or partitions).
  void tail(std::string_view reason, uint64_t n = 1);

 private:
  prometheus::Counter* streamed_;
  prometheus::Counter* bytes_;
  std::array<prometheus::Counter*, kStreamTailReasons.size()> tail_{};
};

}  // namespace epochgate::metrics
