// proxy/net/log_limited.h: log lines written once per connection event (a frame
// error, a refused or timed-out connection, an upstream that cannot be
// reached, a limit reached) go through a rate-limited site per call site, so
// thousands of hostile or failing connections cannot flood the log (at
// most logging.rate_limit_per_sec lines per site and second; the count of
// suppressed lines is written when lines pass again).
#pragma once

#include <spdlog/spdlog.h>

#include "metrics/logging.h"

/// Formats like spdlog (fmt syntax) and logs through the default logger at
/// level `lvl` (a spdlog::level name: info, warn, ...), rate-limited under the name `kind`.
#define EPOCHGATE_PROXY_LOG(lvl, kind, ...)                                          \
  EPOCHGATE_LOG_LIMITED(*spdlog::default_logger_raw(), spdlog::level::lvl, kind, \
                        fmt::format(__VA_ARGS__))
