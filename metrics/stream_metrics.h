// metrics/stream_metrics.h: the families of Fetch responses relayed to the
// client as they arrive (proxy/session/response_stream.h): how many were streamed,
// and what happened to a streamed response's top-level tagged fields, which
// must keep the broker's length, and their record bytes spliced socket to
// socket. Labels are bounded (kStreamTailReasons, kSpliceFallbackReasons).
// Thread-safe (prometheus-cpp atomics); no label maps on the data path.
#pragma once

#include <array>
#include <memory>
#include <string_view>

#include "metrics/side.h"

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

/// Every `reason` of epochgate_splice_fallbacks_total: no pipe could be made;
/// the destination's socket (the client's for Fetch records, the broker's
/// for Produce records) took only part of a splice (the rest was copied).
inline constexpr std::array<std::string_view, 3> kSpliceFallbackReasons = {
    "no_pipe", "client_full", "upstream_full"};

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
  /// epochgate_spliced_bytes_total{direction}: record bytes moved socket to
  /// socket (Fetch records upstream_to_client, Produce records client_to_upstream).
  void spliced(Direction d, uint64_t n);
  /// epochgate_splice_fallbacks_total{direction,reason}.
  void splice_fallback(Direction d, std::string_view reason);

 private:
  prometheus::Counter* streamed_;
  prometheus::Counter* bytes_;
  std::array<prometheus::Counter*, kStreamTailReasons.size()> tail_{};
  std::array<prometheus::Counter*, 2> spliced_{};  // by Direction
  // by Direction, then reason (a destination's reason only in its direction)
  std::array<std::array<prometheus::Counter*, kSpliceFallbackReasons.size()>, 2> fallbacks_{};
};

}  // namespace epochgate::metrics
