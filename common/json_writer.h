// common/json_writer.h: a small streaming JSON writer for log lines and the
// admin /debug endpoints. Output is always valid JSON text: strings are escaped
// and invalid UTF-8 bytes become U+FFFD, so wire bytes that reach a log field
// cannot break a log pipeline. Never throws; misuse (value without key inside
// an object) is the caller's bug and produces malformed output, not a crash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace epochgate::common {

/// Appends `s` to `out` as a quoted JSON string (escapes ", \, control
/// characters; replaces invalid UTF-8 with U+FFFD).
void append_json_string(std::string& out, std::string_view s);

/// Builds one JSON value into a string. Commas between members and elements
/// are inserted automatically.
///   JsonWriter w; w.begin_object().key("a").value(1).end_object(); w.str() == "{\"a\":1}"
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  /// Member name; the next call writes its value.
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view v);
  JsonWriter& value(const char* v) { return value(std::string_view(v)); }
  JsonWriter& value(const std::string& v) { return value(std::string_view(v)); }
  JsonWriter& value(bool v);
  JsonWriter& value(double v);  ///< NaN and infinities are written as null
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  JsonWriter& value(T v) {
    return raw(std::to_string(v));
  }
  JsonWriter& null();
  /// Inserts an already-serialized JSON value (caller guarantees validity).
  JsonWriter& raw(std::string_view json);

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void before_value();
  std::string out_;
  std::vector<bool> first_;  // per open container: no member written yet
  bool after_key_ = false;
};

}  // namespace epochgate::common
