// proxy/core/reroute_owner.h: what a RerouteState tells the worker's
// rerouter when it ends, as an interface so core/ does not depend on
// reroute/ (the rerouter implements it).
#pragma once

namespace epochgate::proxy {

struct RerouteState;

/// The owner of every RerouteState on one worker (the Rerouter).
class RerouteOwner {
 public:
  virtual ~RerouteOwner() = default;
  /// `st` is being destroyed: the streams it forwarded on the client's
  /// own path count as answered in the order guard, so no later write to
  /// them waits for an answer that will never come.
  virtual void direct_answered(RerouteState& st) = 0;
};

}  // namespace epochgate::proxy
