// proxy/core/refresh_requests.h: how fencing asks for a metadata refresh
// and learns when the last one finished, as an interface so fencing/ does
// not depend on the app's Refresher (which implements it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace epochgate::proxy {

/// The metadata refresher, as the fencing hooks see it. Thread-safe: the
/// workers call it from their loops.
class RefreshRequests {
 public:
  virtual ~RefreshRequests() = default;
  /// Refresh `topics` soon (empty: what the view knows), rate-limited;
  /// `trigger` is a static label for the metrics.
  virtual void request_urgent(std::vector<std::string> topics, const char* trigger) = 0;
  /// As request_urgent, for topics an epoch-less client reported moved:
  /// refreshed at once within a per-topic bound.
  virtual void request_confirm(std::vector<std::string> topics, const char* trigger) = 0;
  /// Steady-clock ms at which the last refresh round completed (0: none yet).
  virtual uint64_t last_completed_ms() const = 0;
};

}  // namespace epochgate::proxy
