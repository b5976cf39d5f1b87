// metrics/logging.h: process-wide logging on spdlog. One sink (stderr by
// default) shared by every component logger; text lines for people or JSON
// lines for log pipelines (one object per line: ts, level, logger, msg, then
// the call's fields); level, format and rate limit changeable at run time
// (config hot reload). Per-fence and per-error lines go through a rate-limited
// site so a storm of stale requests cannot flood the log.
//
// RULE: authentication bytes are never logged. Do not pass to any log call:
//   - request or response bodies of SaslHandshake (17), SaslAuthenticate (36),
//     the delegation-token APIs (38-41) or AlterUserScramCredentials (51):
//     check may_log_payload(api_key) before logging any frame bytes;
//   - any bytes a connection sends before its SASL exchange completes;
//   - config values under secret keys (config::is_secret_key()).
// Log API keys, sizes, correlation ids, error codes and topic/partition names
// instead. This file never logs payloads itself.
#pragma once

#include <spdlog/common.h>
#include <spdlog/logger.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>

namespace epochgate::metrics {

/// Line format of every log line.
enum class LogFormat { kText, kJson };

/// Parses "text" / "json". Returns false (and leaves `out`) for anything else.
bool parse_log_format(std::string_view name, LogFormat* out);
/// Parses trace|debug|info|warn|warning|error|critical|off.
bool parse_log_level(std::string_view name, spdlog::level::level_enum* out);

/// One key/value attached to a log line. Holds views: valid for the duration
/// of the log call only. In JSON lines numbers and booleans stay typed.
struct LogField {
  enum class Kind { kString, kInt, kUint, kDouble, kBool };
  LogField(std::string_view k, std::string_view v) : key(k), kind(Kind::kString), str(v) {}
  LogField(std::string_view k, const char* v) : key(k), kind(Kind::kString), str(v ? v : "") {}
  LogField(std::string_view k, const std::string& v) : key(k), kind(Kind::kString), str(v) {}
  LogField(std::string_view k, bool v) : key(k), kind(Kind::kBool), b(v) {}
  LogField(std::string_view k, double v) : key(k), kind(Kind::kDouble), d(v) {}
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  LogField(std::string_view k, T v) : key(k) {
    if constexpr (std::is_signed_v<T>) {
      kind = Kind::kInt;
      i = v;
    } else {
      kind = Kind::kUint;
      u = v;
    }
  }

  std::string_view key;
  Kind kind = Kind::kString;
  std::string_view str;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  bool b = false;
};

/// Settings that logging{} in the config file maps to. All apply live.
struct LogOptions {
  std::string level = "info";
  std::string format = "text";
  uint32_t rate_limit_per_sec = 10;  ///< per rate-limited site; 0 = unlimited
};

/// Applies `options` (level, format, rate limit) to every logger, present and
/// future, and makes logger("epochgate") spdlog's default logger so plain
/// spdlog::info(...) calls share the sink and format. Returns false and sets
/// `*error` if a level or format is unknown (nothing is changed then). Safe to
/// call again at run time (hot reload).
bool configure_logging(const LogOptions& options, std::string* error = nullptr);

/// Changes the level of every logger at run time. False if `level` is unknown.
bool set_level(std::string_view level);
/// Current level name ("info", ...).
std::string current_level();
/// Switches between text and JSON lines at run time. False if unknown.
bool set_format(std::string_view format);
/// Lines per second each rate-limited site may write (0 = unlimited).
void set_rate_limit_per_sec(uint32_t n);
uint32_t rate_limit_per_sec();

/// Where finished lines go. Default (nullptr) is stderr. Tests capture lines
/// with a callback; it receives one line without the trailing newline and is
/// called under the sink's lock.
void set_log_output(std::function<void(std::string_view line)> output);

/// The logger of a component ("proxy", "policy", "config", "admin", ...),
/// created on first use with the shared sink and current level. Loggers live
/// until the process exits, so keeping a reference is fine. Thread-safe.
std::shared_ptr<spdlog::logger> logger(std::string_view component);

/// Writes `msg` with `fields` if `lg` logs at `level`. Text lines render
/// fields as key=value (values with spaces or quotes are quoted); JSON lines as
/// members after "msg". Field keys ts/level/logger/msg get a leading '_'.
void log(spdlog::logger& lg, spdlog::level::level_enum level, std::string_view msg,
         std::initializer_list<LogField> fields = {});

/// False for APIs whose frames carry credentials (SASL, delegation tokens,
/// SCRAM credentials): their bytes must never reach a log line.
bool may_log_payload(int16_t api_key);

/// A rate limit for one call site (one "kind" of line: a fence, a frame error).
/// Up to rate_limit_per_sec() lines per wall-clock second pass; the rest are
/// counted, and the next line that passes (or flush_suppressed_log_summaries())
/// first writes "suppressed K lines" with fields kind and suppressed.
/// Thread-safe. Normally declared through EPOCHGATE_LOG_LIMITED.
class RateLimitedSite {
 public:
  explicit RateLimitedSite(const char* kind);
  ~RateLimitedSite();
  RateLimitedSite(const RateLimitedSite&) = delete;
  RateLimitedSite& operator=(const RateLimitedSite&) = delete;

  /// Logs like log() unless this second's budget is spent.
  void log(spdlog::logger& lg, spdlog::level::level_enum level, std::string_view msg,
           std::initializer_list<LogField> fields = {});

  /// The decision for a line at `now_ms` (a monotonic clock in ms) with
  /// `limit` lines per second (0 = unlimited): `emit` says whether to write it;
  /// `suppressed_before` is how many lines were dropped since the last summary
  /// and must be reported now (the counter is reset).
  struct Decision {
    bool emit = false;
    uint64_t suppressed_before = 0;
  };
  Decision admit(uint64_t now_ms, uint32_t limit);

  /// Writes the pending summary if lines were suppressed in an earlier second.
  void flush(uint64_t now_ms);

  const char* kind() const { return kind_; }
  /// Lines dropped by this site since it was created.
  uint64_t suppressed_total() const;

 private:
  friend void flush_suppressed_log_summaries(bool);
  const char* kind_;
  mutable std::mutex mutex_;
  uint64_t window_ = UINT64_MAX;  // current second (now_ms / 1000)
  uint32_t in_window_ = 0;
  uint64_t suppressed_ = 0;
  uint64_t suppressed_total_ = 0;
  spdlog::logger* last_logger_ = nullptr;
  spdlog::level::level_enum last_level_ = spdlog::level::info;
};

/// Writes pending "suppressed K lines" summaries of every site. Call it from a
/// 1 s timer so the count of a storm that has stopped still reaches the log,
/// and once with `including_current_second` at exit, so a count from the last
/// second is not lost with the process.
void flush_suppressed_log_summaries(bool including_current_second = false);

}  // namespace epochgate::metrics

/// Rate-limited log line, keyed by this call site:
///   EPOCHGATE_LOG_LIMITED(*lg, spdlog::level::warn, "fence", "fenced produce",
///                         {{"topic", topic}, {"partition", p}});
#define EPOCHGATE_LOG_LIMITED(lg, level, kind, msg, ...)                      \
  do {                                                                        \
    static ::epochgate::metrics::RateLimitedSite epochgate_rate_site_{kind};  \
    epochgate_rate_site_.log((lg), (level), (msg)__VA_OPT__(, ) __VA_ARGS__); \
  } while (0)
