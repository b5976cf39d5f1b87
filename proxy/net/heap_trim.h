// proxy/net/heap_trim.h: hands the allocator's free pages back to the system
// after the workers let go of memory (sessions freed, pool blocks shed).
// glibc keeps the pages of freed chunks resident when they sit below the top
// of an arena, which is where a burst of short connections leaves them, so
// without this the resident size stays at the burst's peak and creeps up to
// the arenas' size as later bursts touch other pages.
#pragma once

#include <cstdint>

namespace epochgate::proxy {

/// When `released` (the caller freed memory since its last call) and no
/// thread trimmed within the last `min_interval_ns` nanoseconds (monotonic
/// `now_ns`), returns the free pages of every malloc arena to the system
/// (glibc malloc_trim; a no-op elsewhere, and under AddressSanitizer, whose
/// allocator serves every allocation). Thread-safe; returns true when it
/// trimmed.
bool trim_heap_if_due(bool released, uint64_t now_ns,
                      uint64_t min_interval_ns = 1000000000ull);

}  // namespace epochgate::proxy
