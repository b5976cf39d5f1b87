// config/yaml_parser.h: the YAML -> Config parser shared by config/loader.cc
// (scalars, sections, the key table walk) and config/yaml_lists.cc (the
// hand-written list and map keys). Internal to config/: the public entry
// points are config/loader.h's parse_config_string and parse_config_file.
// Records every problem with its line and column; never throws, never
// validates relations between keys (config/validate.cc does).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_text.h"
#include "config/keys.h"
#include "config/loader.h"
#include "config/value_parsers.h"

namespace epochgate::config::detail {

/// How a scalar integer is written: plain, a size ("1MiB") or a duration ("30s").
enum class UintKind { kPlain, kSize, kDuration };

/// Parses one YAML text into `result.config`, recording where each setting
/// came from (`result.origins`) and every problem (`result.problems`).
class Parser {
 public:
  Parser(LoadResult& result, std::string file) : r_(result), file_(std::move(file)) {}

  void parse(std::string_view text);

 private:
  Origin origin_of(const YAML::Mark& m, bool valid = true) const {
    if (m.is_null()) return Origin{file_, 0, 0, valid};
    return Origin{file_, m.line + 1, m.column + 1, valid};
  }

  void problem(const YAML::Mark& m, std::string reason) {
    const Origin o = origin_of(m);
    r_.problems.push_back(Problem{file_, o.line, o.column, std::move(reason)});
  }

  // A value that could not be used: report it and mark the setting so
  // validation does not build a second complaint on the default left in place.
  void bad(const std::string& path, const YAML::Mark& m, const std::string& reason) {
    problem(m, path + ": " + reason);
    r_.origins[path] = origin_of(m, false);
  }

  void seen(const std::string& path, const YAML::Mark& m) { r_.origins[path] = origin_of(m); }

  static YAML::Mark mark_of(const YAML::Node& n, const YAML::Mark& fallback) {
    const YAML::Mark m = n.Mark();
    return m.is_null() ? fallback : m;
  }

  static std::string describe(const YAML::Node& n);

  // Walks the map `n` at `path` whose valid keys are schema `schema_key`,
  // reporting unknown and duplicate keys, and calls
  // on_field(key, value, child_path, value_mark) for the others.
  template <typename F>
  void each_field(const YAML::Node& n, const std::string& path, const std::string& schema_key,
                  const YAML::Mark& where, F&& on_field) {
    if (n.IsNull()) return;  // "admin:" with nothing under it: defaults
    if (!n.IsMap()) {
      bad(path.empty() ? "(top level)" : path, mark_of(n, where),
          "expected a map, got " + describe(n));
      return;
    }
    const Keys& keys = config_schema_keys().at(schema_key);
    std::map<std::string, int> first_line;
    for (const auto& entry : n) {
      const YAML::Node& k = entry.first;
      const YAML::Node& v = entry.second;
      const YAML::Mark km = mark_of(k, where);
      if (!k.IsScalar()) {
        problem(km, "keys must be plain names, got " + describe(k));
        continue;
      }
      const std::string key = k.Scalar();
      const std::string child = path.empty() ? key : path + "." + key;
      if (auto it = first_line.find(key); it != first_line.end()) {
        problem(km, "duplicate key " + quoted(key) + " (first at line " +
                        std::to_string(it->second) + ")");
        continue;
      }
      first_line[key] = km.line + 1;
      bool known = false;
      for (std::string_view valid : keys) known = known || valid == key;
      if (!known) {
        const std::string where_text = path.empty() ? "at the top level" : "in " + path;
        const std::string suggestion = closest_name(key, keys);
        problem(km, "unknown key " + quoted(key) + " " + where_text +
                        (suggestion.empty() ? " (valid keys: " + join(keys) + ")"
                                            : " (did you mean " + quoted(suggestion) + "?)"));
        continue;
      }
      on_field(key, v, child, mark_of(v, km));
    }
  }

  bool scalar(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
              const std::string& expected, std::string* out);

  template <typename T>
  void uint_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m, T& out,
                  UintKind kind = UintKind::kPlain, uint64_t max = std::numeric_limits<T>::max()) {
    const char* expected = kind == UintKind::kSize       ? "a size in bytes (e.g. 1048576 or 1MiB)"
                           : kind == UintKind::kDuration ? "a duration in ms (e.g. 500 or 30s)"
                                                         : "an integer";
    std::string s;
    if (!scalar(v, path, m, expected, &s)) return;
    std::optional<uint64_t> value = kind == UintKind::kSize       ? parse_size(s)
                                    : kind == UintKind::kDuration ? parse_duration_ms(s)
                                                                  : parse_uint(s);
    if (!value) {
      const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
      if (s.size() > 1 && s[0] == '-' && parse_uint(s.substr(1))) {
        bad(path, m, s + " is out of range (must not be negative)");
      } else if (digits) {  // too many digits for 64 bits
        bad(path, m, s + " is out of range (at most " + std::to_string(max) + ")");
      } else {
        bad(path, m, "expected " + std::string(expected) + ", got " + quoted(s));
      }
      return;
    }
    if (*value > max) {
      bad(path, m, s + " is out of range (at most " + std::to_string(max) + ")");
      return;
    }
    out = static_cast<T>(*value);
    seen(path, m);
  }

  void bool_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m, bool& out);

  void string_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                    std::string& out);

  void choice_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                    const KeySpec& spec, std::string& out);

  void mode_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                  const KeySpec& spec, Mode& out);

  bool host_port_value(const std::string& text, const std::string& path, const YAML::Mark& m,
                       HostPort& out);

  void host_port_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                       HostPort& out);

  // A list of host:port, or one string with comma-separated entries.
  void bootstrap_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                       std::vector<HostPort>& out);

  void broker_map_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                        std::map<int32_t, uint16_t>& out);

  void rules_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                   std::vector<PolicyRule>& out);

  void apis_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                  std::vector<std::string>& out);

  void top(const YAML::Node& root);

  // One key of the table (each_field let only known keys through): a section
  // recurses, a list or map goes to its hand-written parser, a scalar is
  // parsed by its kind straight into its Config member.
  void key_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m);

 public:
  // Keys whose parser is written by hand (lists and maps; the rule keys are
  // parsed inside rules_field). Every one must be a row of config/keys.def.
  struct HandParsed {
    std::string_view path;
    void (Parser::*parse)(const YAML::Node&, const std::string&, const YAML::Mark&);
  };
  static const std::vector<HandParsed>& hand_parsed();

 private:
  void parse_bootstrap(const YAML::Node& v, const std::string& p, const YAML::Mark& m) {
    bootstrap_field(v, p, m, r_.config.bootstrap_servers);
  }
  void parse_broker_map(const YAML::Node& v, const std::string& p, const YAML::Mark& m) {
    broker_map_field(v, p, m, r_.config.broker_ports.map);
  }
  void parse_rules(const YAML::Node& v, const std::string& p, const YAML::Mark& m) {
    rules_field(v, p, m, r_.config.policy.rules);
  }

  LoadResult& r_;
  std::string file_;
};


}  // namespace epochgate::config::detail
