// proxy/net/clock.h: the one clock the proxy stamps the metadata view, its
// deadlines and its timeouts with. The view compares stamps written by
// different threads (the workers' decisions, the refresher, response
// learning), so every "now" handed to it comes from here.
#pragma once

#include <uv.h>

#include <cstdint>

namespace epochgate::proxy {

/// Monotonic nanoseconds since an arbitrary point (uv_hrtime, the clock
/// uv_now() is also based on); never wall-clock time. Deadlines and
/// durations below a millisecond use it.
inline uint64_t now_ns() { return uv_hrtime(); }

/// now_ns() in milliseconds: what the metadata view and its ages use.
inline uint64_t now_ms() { return now_ns() / 1000000; }

}  // namespace epochgate::proxy
