// proxy/core/confirm_limiter.h: the bound on refreshes that confirm a leader move
// a client's epoch-less Metadata (below v7) reported. Such a report makes the
// view entry suspect, and a suspect entry fences nothing, so the refresher
// confirms it at once instead of after refresher.urgent_min_interval_ms; a
// client must still not be able to make the refresher storm by repeating
// such reports (a flapping or lying broker answer, many topics). Pure
// bookkeeping: the caller passes the clock and holds any lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>

namespace epochgate::proxy {

/// Decides which confirmations may skip the urgent refresh interval.
class ConfirmLimiter {
 public:
  /// Refreshes that skip the interval, at most this many per
  /// urgent_min_interval_ms, whatever the topics.
  static constexpr size_t kBurst = 4;
  /// Topics remembered with their last confirmation; past this many (all
  /// confirmed within the interval) a report waits like any urgent refresh.
  static constexpr size_t kMaxTopics = 4096;

  /// `topic` was reported moved without an epoch at `now_ms` (monotonic
  /// ms). True (and recorded) when it had no confirmation in the last
  /// `min_interval_ms`: its refresh may go at once. False: it waits for the
  /// ordinary urgent refresh.
  bool admit_topic(const std::string& topic, uint64_t now_ms, uint64_t min_interval_ms) {
    auto it = last_.find(topic);
    if (it != last_.end()) {
      if (now_ms - it->second < min_interval_ms) return false;
      it->second = now_ms;
      return true;
    }
    if (last_.size() >= kMaxTopics) {
      for (auto i = last_.begin(); i != last_.end();)
        i = now_ms - i->second >= min_interval_ms ? last_.erase(i) : std::next(i);
      if (last_.size() >= kMaxTopics) return false;
    }
    last_.emplace(topic, now_ms);
    return true;
  }

  /// A refresh skipping the interval may start at `now_ms`: fewer than
  /// kBurst did in the last `min_interval_ms`. Records it when true.
  bool admit_refresh(uint64_t now_ms, uint64_t min_interval_ms) {
    while (!starts_.empty() && now_ms - starts_.front() >= min_interval_ms) starts_.pop_front();
    if (starts_.size() >= kBurst) return false;
    starts_.push_back(now_ms);
    return true;
  }

  /// Topics remembered now (for tests).
  size_t topics() const { return last_.size(); }

 private:
  std::unordered_map<std::string, uint64_t> last_;
  std::deque<uint64_t> starts_;
};

}  // namespace epochgate::proxy
