// common/bounded_debounce.h: a trailing debounce that a busy directory cannot
// postpone forever. File watchers (config/watcher.cc, proxy/tls/tls_reloader.cc)
// watch a directory, so a file written beside the watched one (a log) sends
// events too; with a plain trailing debounce, one written more often than the
// quiet time would hold a real change back for as long as it is written.
#pragma once

#include <algorithm>
#include <cstdint>

namespace epochgate {

/// When a burst of file events is acted on: `quiet_ms` after its last event,
/// but never later than `max_ms` after its first. Not thread-safe.
struct BoundedDebounce {
  static constexpr uint64_t kQuietMs = 200;
  static constexpr uint64_t kMaxMs = 1000;

  uint64_t quiet_ms = kQuietMs;
  uint64_t max_ms = kMaxMs;
  uint64_t burst_started_ms = 0;  ///< loop time (ms) of the burst's first event

  /// The delay (ms) to (re)start the one-shot timer with, for an event at
  /// `now_ms`. `timer_pending`: the timer this burst started has not fired
  /// yet (false: this event starts a new burst).
  uint64_t delay_ms(bool timer_pending, uint64_t now_ms) {
    if (!timer_pending) burst_started_ms = now_ms;
    const uint64_t latest = burst_started_ms + max_ms;
    return latest > now_ms ? std::min(quiet_ms, latest - now_ms) : 0;
  }
};

}  // namespace epochgate
