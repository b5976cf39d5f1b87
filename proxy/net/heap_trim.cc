// proxy/net/heap_trim.cc
#include "proxy/net/heap_trim.h"

#include <atomic>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

// Under AddressSanitizer every allocation is the sanitizer's, so glibc's
// arenas hold nothing to trim, and walking them there is not safe: an ASan
// suite run crashed inside malloc_trim (SEGV reading address 0x8 in mtrim).
// GCC says so with __SANITIZE_ADDRESS__, Clang with __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define EPOCHGATE_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EPOCHGATE_UNDER_ASAN 1
#endif
#endif

namespace epochgate::proxy {

namespace {
// One trim serves every worker: it walks all arenas.
std::atomic<uint64_t> last_trim_ns{0};
}  // namespace

bool trim_heap_if_due(bool released, uint64_t now_ns, uint64_t min_interval_ns) {
  if (!released) return false;
  uint64_t last = last_trim_ns.load(std::memory_order_relaxed);
  if (last != 0 && now_ns - last < min_interval_ns) return false;
  if (!last_trim_ns.compare_exchange_strong(last, now_ns, std::memory_order_relaxed))
    return false;  // another worker trims now
#if defined(__GLIBC__) && !defined(EPOCHGATE_UNDER_ASAN)
  malloc_trim(0);
  return true;
#else
  return false;
#endif
}

}  // namespace epochgate::proxy
