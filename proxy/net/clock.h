// proxy/net/clock.h: the one clock the proxy stamps the metadata view, its
// deadlines and its timeouts with. The view compares stamps written by
// different threads (the workers' decisions, the refresher, response
// learning), so every "now" handed to it comes from here.
#pragma once

#include <uv.h>

#include <cstdint>

namespace epochgate::proxy {

/// Monotonic milliseconds since an arbitrary point (uv_hrtime, the clock
/// uv_now() is also based on); never wall-clock time.
inline uint64_t now_ms() { return uv_hrtime() / 1000000; }

}  // namespace epochgate::proxy
