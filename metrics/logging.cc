// metrics/logging.cc: the shared line sink (text or JSON), component loggers,
// run-time level/format changes and rate-limited sites. Fields travel from
// log() to the sink through a thread-local pointer: loggers are synchronous,
// so the sink formats the line on the calling thread while the fields live.
// Never logs payload bytes itself (see the rule in logging.h).
#include "metrics/logging.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <vector>

#include "common/json_writer.h"

namespace epochgate::metrics {

using common::append_json_string;
using common::JsonWriter;
namespace {

thread_local const std::initializer_list<LogField>* t_fields = nullptr;

const char* level_name(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
      return "trace";
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::info:
      return "info";
    case spdlog::level::warn:
      return "warn";
    case spdlog::level::err:
      return "error";
    case spdlog::level::critical:
      return "critical";
    default:
      return "off";
  }
}

// "2026-01-31T12:34:56.789Z"
void append_timestamp(std::string& out, spdlog::log_clock::time_point tp) {
  const auto since = tp.time_since_epoch();
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(since);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(since - secs).count();
  const std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  out += buf;
}

bool reserved_key(std::string_view k) {
  return k == "ts" || k == "level" || k == "logger" || k == "msg";
}

void append_number(std::string& out, const LogField& f) {
  JsonWriter w;
  switch (f.kind) {
    case LogField::Kind::kInt:
      w.value(f.i);
      break;
    case LogField::Kind::kUint:
      w.value(f.u);
      break;
    case LogField::Kind::kDouble:
      w.value(f.d);
      break;
    case LogField::Kind::kBool:
      w.value(f.b);
      break;
    case LogField::Kind::kString:
      break;
  }
  out += w.str();
}

// Text lines: control characters in messages are escaped so a value read from
// the wire cannot forge a second log line.
void append_text_escaped(std::string& out, std::string_view s) {
  bool plain = !s.empty();
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F || c == '"' || c == ' ' || c == '=' || u >= 0x80) {
      plain = false;
      break;
    }
  }
  if (plain) {
    out.append(s);
  } else {
    append_json_string(out, s);
  }
}

void append_message_text(std::string& out, std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
}

class LineSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set_output(std::function<void(std::string_view)> output) {
    std::lock_guard<std::mutex> lock(mutex_);
    output_ = std::move(output);
  }
  std::atomic<LogFormat> format{LogFormat::kText};

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    line_.clear();
    const std::string_view logger_name(msg.logger_name.data(), msg.logger_name.size());
    const std::string_view text(msg.payload.data(), msg.payload.size());
    if (format.load(std::memory_order_relaxed) == LogFormat::kJson) {
      format_json(msg, logger_name, text);
    } else {
      format_text(msg, logger_name, text);
    }
    if (output_) {
      output_(line_);
    } else {
      line_.push_back('\n');
      std::fwrite(line_.data(), 1, line_.size(), stderr);
    }
  }

  void flush_() override {
    if (!output_) std::fflush(stderr);
  }

 private:
  void format_json(const spdlog::details::log_msg& msg, std::string_view logger_name,
                   std::string_view text) {
    line_ += "{\"ts\":\"";
    append_timestamp(line_, msg.time);
    line_ += "\",\"level\":\"";
    line_ += level_name(msg.level);
    line_ += "\",\"logger\":";
    append_json_string(line_, logger_name);
    line_ += ",\"msg\":";
    append_json_string(line_, text);
    if (t_fields != nullptr) {
      for (const LogField& f : *t_fields) {
        line_.push_back(',');
        std::string key = reserved_key(f.key) ? "_" + std::string(f.key) : std::string(f.key);
        append_json_string(line_, key);
        line_.push_back(':');
        if (f.kind == LogField::Kind::kString) {
          append_json_string(line_, f.str);
        } else {
          append_number(line_, f);
        }
      }
    }
    line_.push_back('}');
  }

  void format_text(const spdlog::details::log_msg& msg, std::string_view logger_name,
                   std::string_view text) {
    append_timestamp(line_, msg.time);
    line_.push_back(' ');
    line_ += level_name(msg.level);
    line_ += " [";
    line_.append(logger_name);
    line_ += "] ";
    append_message_text(line_, text);
    if (t_fields != nullptr) {
      for (const LogField& f : *t_fields) {
        line_.push_back(' ');
        if (reserved_key(f.key)) line_.push_back('_');
        append_text_escaped(line_, f.key);
        line_.push_back('=');
        if (f.kind == LogField::Kind::kString) {
          append_text_escaped(line_, f.str);
        } else {
          append_number(line_, f);
        }
      }
    }
  }

  std::function<void(std::string_view)> output_;
  std::string line_;
};

struct State {
  std::shared_ptr<LineSink> sink = std::make_shared<LineSink>();
  std::atomic<int> level{spdlog::level::info};
  std::atomic<uint32_t> rate_limit{10};
  std::mutex loggers_mutex;
  std::map<std::string, std::shared_ptr<spdlog::logger>, std::less<>> loggers;
  std::mutex sites_mutex;
  std::vector<RateLimitedSite*> sites;
};

// Deliberately leaked: lines may still be written while statics are destroyed.
State& state() {
  static State* s = new State;
  return *s;
}

uint64_t monotonic_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct FieldsScope {
  explicit FieldsScope(const std::initializer_list<LogField>* f) { t_fields = f; }
  ~FieldsScope() { t_fields = nullptr; }
};

void write_summary(spdlog::logger& lg, spdlog::level::level_enum level, const char* kind,
                   uint64_t n) {
  const std::string text = "suppressed " + std::to_string(n) + " \"" + kind + "\" lines";
  metrics::log(lg, level, text, {{"kind", kind}, {"suppressed", n}});
}

}  // namespace

bool parse_log_format(std::string_view name, LogFormat* out) {
  if (name == "text") {
    *out = LogFormat::kText;
  } else if (name == "json") {
    *out = LogFormat::kJson;
  } else {
    return false;
  }
  return true;
}

bool parse_log_level(std::string_view name, spdlog::level::level_enum* out) {
  static const std::pair<std::string_view, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace},       {"debug", spdlog::level::debug},
      {"info", spdlog::level::info},         {"warn", spdlog::level::warn},
      {"warning", spdlog::level::warn},      {"error", spdlog::level::err},
      {"critical", spdlog::level::critical}, {"off", spdlog::level::off}};
  for (const auto& [n, l] : kLevels) {
    if (n == name) {
      *out = l;
      return true;
    }
  }
  return false;
}

bool configure_logging(const LogOptions& options, std::string* error) {
  spdlog::level::level_enum level;
  LogFormat format;
  if (!parse_log_level(options.level, &level)) {
    if (error) *error = "unknown log level '" + options.level + "'";
    return false;
  }
  if (!parse_log_format(options.format, &format)) {
    if (error) *error = "unknown log format '" + options.format + "' (text or json)";
    return false;
  }
  // Plain spdlog::info(...) calls go through the same sink and format.
  spdlog::set_default_logger(logger("epochgate"));
  set_level(options.level);
  state().sink->format.store(format);
  set_rate_limit_per_sec(options.rate_limit_per_sec);
  return true;
}

bool set_level(std::string_view name) {
  spdlog::level::level_enum level;
  if (!parse_log_level(name, &level)) return false;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.loggers_mutex);
  s.level.store(level);
  for (auto& [_, lg] : s.loggers) lg->set_level(level);
  return true;
}

std::string current_level() {
  return level_name(static_cast<spdlog::level::level_enum>(state().level.load()));
}

bool set_format(std::string_view name) {
  LogFormat format;
  if (!parse_log_format(name, &format)) return false;
  state().sink->format.store(format);
  return true;
}

void set_rate_limit_per_sec(uint32_t n) {
  state().rate_limit.store(n);
}
uint32_t rate_limit_per_sec() {
  return state().rate_limit.load();
}

void set_log_output(std::function<void(std::string_view)> output) {
  state().sink->set_output(std::move(output));
}

std::shared_ptr<spdlog::logger> logger(std::string_view component) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.loggers_mutex);
  auto it = s.loggers.find(component);
  if (it != s.loggers.end()) return it->second;
  auto lg = std::make_shared<spdlog::logger>(std::string(component), s.sink);
  lg->set_level(static_cast<spdlog::level::level_enum>(s.level.load()));
  s.loggers.emplace(std::string(component), lg);
  return lg;
}

void log(spdlog::logger& lg, spdlog::level::level_enum level, std::string_view msg,
         std::initializer_list<LogField> fields) {
  if (!lg.should_log(level)) return;
  FieldsScope scope(&fields);
  lg.log(level, spdlog::string_view_t(msg.data(), msg.size()));
}

bool may_log_payload(int16_t api_key) {
  switch (api_key) {
    case 17:  // SaslHandshake
    case 36:  // SaslAuthenticate
    case 38:  // CreateDelegationToken
    case 39:  // RenewDelegationToken
    case 40:  // ExpireDelegationToken
    case 41:  // DescribeDelegationToken
    case 51:  // AlterUserScramCredentials
      return false;
    default:
      return true;
  }
}

RateLimitedSite::RateLimitedSite(const char* kind) : kind_(kind) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.sites_mutex);
  s.sites.push_back(this);
}

RateLimitedSite::~RateLimitedSite() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.sites_mutex);
  s.sites.erase(std::remove(s.sites.begin(), s.sites.end(), this), s.sites.end());
}

RateLimitedSite::Decision RateLimitedSite::admit(uint64_t now_ms, uint32_t limit) {
  std::lock_guard<std::mutex> lock(mutex_);
  Decision d;
  const uint64_t window = now_ms / 1000;
  if (window != window_) {
    window_ = window;
    in_window_ = 0;
    d.suppressed_before = suppressed_;
    suppressed_ = 0;
  }
  if (limit == 0 || in_window_ < limit) {
    ++in_window_;
    d.emit = true;
  } else {
    ++suppressed_;
    ++suppressed_total_;
  }
  return d;
}

void RateLimitedSite::log(spdlog::logger& lg, spdlog::level::level_enum level, std::string_view msg,
                          std::initializer_list<LogField> fields) {
  if (!lg.should_log(level)) return;
  const Decision d = admit(monotonic_ms(), rate_limit_per_sec());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_logger_ = &lg;
    last_level_ = level;
  }
  if (d.suppressed_before > 0) write_summary(lg, level, kind_, d.suppressed_before);
  if (d.emit) metrics::log(lg, level, msg, fields);
}

void RateLimitedSite::flush(uint64_t now_ms) {
  uint64_t n = 0;
  spdlog::logger* lg = nullptr;
  spdlog::level::level_enum level;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (suppressed_ == 0 || now_ms / 1000 == window_ || last_logger_ == nullptr) return;
    n = suppressed_;
    suppressed_ = 0;
    lg = last_logger_;
    level = last_level_;
  }
  write_summary(*lg, level, kind_, n);
}

uint64_t RateLimitedSite::suppressed_total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return suppressed_total_;
}

void flush_suppressed_log_summaries(bool including_current_second) {
  State& s = state();
  // A time past every window makes the current second's count pending too.
  const uint64_t now = including_current_second ? UINT64_MAX - 1 : monotonic_ms();
  std::lock_guard<std::mutex> lock(s.sites_mutex);
  for (RateLimitedSite* site : s.sites) site->flush(now);
}

}  // namespace epochgate::metrics
