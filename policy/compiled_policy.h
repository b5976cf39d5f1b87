// policy/compiled_policy.h: the policy part of the configuration in the form
// the decision functions use (modes compiled, switches and time bounds).
// Plain data built once per (re)load; must never be mutated while shared.
#pragma once

#include <cstdint>

#include "config/config.h"
#include "policy/mode_resolver.h"

namespace epochgate::policy {

struct CompiledPolicy {
  ModeResolver modes;
  bool inject_epochs = true;                ///< write the view's epoch into CurrentLeaderEpoch -1
  uint32_t max_staleness_ms = 300000;       ///< older view entries never fence
  uint32_t refresh_before_fence_ms = 5000;  ///< older entries: hold, refresh, then decide
  uint32_t hold_timeout_ms = 500;           ///< longest a held request waits for that refresh

  /// Builds the compiled form of `cfg` (PolicyConfig defaults: enforce everywhere).
  static CompiledPolicy compile(const config::PolicyConfig& cfg) {
    CompiledPolicy p;
    p.modes = ModeResolver(cfg);
    p.inject_epochs = cfg.inject_epochs;
    p.max_staleness_ms = cfg.max_staleness_ms;
    p.refresh_before_fence_ms = cfg.refresh_before_fence_ms;
    p.hold_timeout_ms = cfg.hold_timeout_ms;
    return p;
  }
};

}  // namespace epochgate::policy
