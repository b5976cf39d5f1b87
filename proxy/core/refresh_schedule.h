// proxy/core/refresh_schedule.h: when the Metadata refresher has something to
// do. One set of rules answers both "what is due now?" (the refresher starts
// it) and "when is the next thing due?" (the refresher arms its one-shot
// timer for that moment), so an idle refresher wakes its loop only when a
// refresh can start, never to find out that none can. Pure bookkeeping: the
// caller passes the clock (monotonic ms, proxy/net/clock.h) and the state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

namespace epochgate::proxy {

/// The refresher's state that decides when its next refresh may start.
/// Times are monotonic ms; 0 means "never happened".
struct RefreshSchedule {
  /// What may start at a given moment.
  enum class Due {
    kNothing,      ///< nothing yet: wait for the next due moment or an event
    kStartup,      ///< the first refresh (brokers only), or its retry
    kPeriodic,     ///< the refresh naming every known topic
    kUrgent,       ///< the pending urgent refresh, its rate limit waited out
    kUrgentWaits,  ///< an urgent one waits out refresher.urgent_min_interval_ms
  };
  /// next_ms() when no moment is due until something happens (an answer,
  /// an urgent request, a config reload).
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();

  bool awaiting = false;                ///< a refresh is in flight
  bool startup_done = false;            ///< a view was loaded once
  uint64_t last_failed_ms = 0;          ///< a round every broker failed ended; 0 after a success
  uint64_t retry_delay_ms = 0;          ///< backoff after that round
  uint64_t last_full_refresh_ms = 0;    ///< last answer to a refresh naming every known topic
  uint64_t periodic_ms = 0;             ///< refresher.interval_ms with this round's jitter
  bool urgent = false;                  ///< an urgent refresh waits
  uint64_t last_refresh_ms = 0;         ///< last answer to any refresh
  uint64_t urgent_min_interval_ms = 0;  ///< refresher.urgent_min_interval_ms

  /// What may start at `now_ms`. A failed round's backoff holds back
  /// everything; the periodic refresh goes before the urgent one (it names
  /// the urgent topics too, and urgent requests coming faster than their
  /// rate limit must not put it off). At kUrgentWaits the caller may still
  /// start the urgent refresh for confirmations that skip the rate limit
  /// (ConfirmLimiter): that is decided when they arrive, not by the clock.
  Due due(uint64_t now_ms) const {
    if (awaiting) return Due::kNothing;
    if (last_failed_ms != 0 && now_ms - last_failed_ms < retry_delay_ms) return Due::kNothing;
    if (!startup_done) return Due::kStartup;
    if (now_ms - last_full_refresh_ms >= periodic_ms) return Due::kPeriodic;
    if (urgent) {
      return now_ms - last_refresh_ms >= urgent_min_interval_ms ? Due::kUrgent : Due::kUrgentWaits;
    }
    return Due::kNothing;
  }

  /// The earliest monotonic ms at which due() is kStartup, kPeriodic or
  /// kUrgent (at or before now when one is due already), or kNever while a
  /// refresh is in flight. Between now and then nothing can start unless an event changes
  /// this state, so a timer armed for it loses nothing.
  uint64_t next_ms() const {
    if (awaiting) return kNever;
    const uint64_t backoff_ends = last_failed_ms != 0 ? last_failed_ms + retry_delay_ms : 0;
    if (!startup_done) return backoff_ends;
    uint64_t next = last_full_refresh_ms + periodic_ms;
    if (urgent) next = std::min(next, last_refresh_ms + urgent_min_interval_ms);
    return std::max(next, backoff_ends);
  }
};

}  // namespace epochgate::proxy
