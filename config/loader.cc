// config/loader.cc: YAML -> Config (structure and types), then whole-config
// validation (config/validate.cc: ranges, relations, port clashes). yaml-cpp throws on syntax
// errors; that is caught here and turned into a located Problem, so nothing
// escapes to the caller. Never applies anything to a running process.
#include "config/loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <type_traits>
#include <variant>
#include <cstdint>
#include <sys/stat.h>

#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "config/config_text.h"
#include "config/keys.h"
#include "config/tls_rules.h"
#include "config/value_parsers.h"

namespace epochgate::config {
namespace {

using detail::is_choice;
using detail::join;
using detail::Keys;
using detail::quoted;

enum class UintKind { kPlain, kSize, kDuration };

class Parser {
 public:
  Parser(LoadResult& result, std::string file) : r_(result), file_(std::move(file)) {}

  void parse(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      // Syntax error: yaml-cpp's mark says where; nothing else can be trusted.
      problem(e.mark, "YAML syntax error: " + e.msg);
      return;
    }
    r_.origins[""] = Origin{file_, 1, 1, true};
    if (root.IsNull()) return;  // empty file: all defaults
    top(root);
  }

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

  static std::string describe(const YAML::Node& n) {
    switch (n.Type()) {
      case YAML::NodeType::Null:
        return "an empty value";
      case YAML::NodeType::Sequence:
        return "a list";
      case YAML::NodeType::Map:
        return "a map";
      case YAML::NodeType::Scalar:
        return quoted(n.Scalar());
      default:
        return "nothing";
    }
  }

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
              const std::string& expected, std::string* out) {
    if (!v.IsScalar()) {
      bad(path, m, "expected " + expected + ", got " + describe(v));
      return false;
    }
    *out = v.Scalar();
    return true;
  }

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

  void bool_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m, bool& out) {
    std::string s;
    if (!scalar(v, path, m, "true or false", &s)) return;
    std::string l;
    for (char c : s) l.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (l == "true" || l == "yes" || l == "on") {
      out = true;
    } else if (l == "false" || l == "no" || l == "off") {
      out = false;
    } else {
      bad(path, m, "expected true or false, got " + quoted(s));
      return;
    }
    seen(path, m);
  }

  void string_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                    std::string& out) {
    if (!scalar(v, path, m, "a string", &out)) return;
    seen(path, m);
  }

  void choice_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                    const KeySpec& spec, std::string& out) {
    const Keys choices = spec.choice_list();
    std::string s;
    if (!scalar(v, path, m, "one of " + join(choices), &s)) return;
    if (is_choice(spec, s)) {
      out = s;
      seen(path, m);
      return;
    }
    const std::string suggestion = closest_name(s, choices);
    bad(path, m,
        quoted(s) + " is not one of " + join(choices) +
            (suggestion.empty() ? "" : " (did you mean " + quoted(suggestion) + "?)"));
  }

  void mode_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                  const KeySpec& spec, Mode& out) {
    std::string s;
    choice_field(v, path, m, spec, s);
    if (auto mode = parse_mode(s)) out = *mode;
  }

  bool host_port_value(const std::string& text, const std::string& path, const YAML::Mark& m,
                       HostPort& out) {
    std::string why;
    auto hp = parse_host_port(text, &why);
    if (!hp) {
      bad(path, m, "bad host:port " + quoted(text) + ": " + why);
      return false;
    }
    out = *hp;
    seen(path, m);
    return true;
  }

  void host_port_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                       HostPort& out) {
    std::string s;
    if (!scalar(v, path, m, "host:port", &s)) return;
    host_port_value(s, path, m, out);
  }

  // A list of host:port, or one string with comma-separated entries.
  void bootstrap_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                       std::vector<HostPort>& out) {
    out.clear();
    if (v.IsNull()) {
      seen(path, m);
      return;
    }
    if (v.IsScalar()) {
      std::stringstream ss(v.Scalar());
      std::string item;
      int i = 0;
      bool all_ok = true;
      while (std::getline(ss, item, ',')) {
        const auto b = item.find_first_not_of(" \t");
        const auto e = item.find_last_not_of(" \t");
        item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
        HostPort hp;
        if (host_port_value(item, path + "[" + std::to_string(i++) + "]", m, hp)) {
          out.push_back(hp);
        } else {
          all_ok = false;
        }
      }
      if (all_ok) seen(path, m);
      return;
    }
    if (!v.IsSequence()) {
      bad(path, m, "expected a list of host:port, got " + describe(v));
      return;
    }
    seen(path, m);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string item_path = path + "[" + std::to_string(i) + "]";
      const YAML::Mark im = mark_of(v[i], m);
      std::string s;
      HostPort hp;
      if (scalar(v[i], item_path, im, "host:port", &s) && host_port_value(s, item_path, im, hp)) {
        out.push_back(hp);
      }
    }
  }

  void broker_map_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                        std::map<int32_t, uint16_t>& out) {
    if (v.IsNull()) return;
    if (!v.IsMap()) {
      bad(path, m, "expected a map of node id: port, got " + describe(v));
      return;
    }
    seen(path, m);
    for (const auto& entry : v) {
      const YAML::Mark km = mark_of(entry.first, m);
      const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "";
      const auto id = parse_uint(key);
      if (!id || *id > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
        problem(km, path + ": node id " + (key.empty() ? describe(entry.first) : quoted(key)) +
                        " is not a non-negative 32-bit integer");
        continue;
      }
      const std::string child = path + "." + std::to_string(*id);
      if (out.count(static_cast<int32_t>(*id))) {
        problem(km, path + ": duplicate node id " + std::to_string(*id));
        continue;
      }
      uint16_t port = 0;
      uint_field(entry.second, child, mark_of(entry.second, km), port);
      if (r_.origins.count(child) && r_.origins[child].valid) {
        out[static_cast<int32_t>(*id)] = port;
      }
    }
  }

  void rules_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                   std::vector<PolicyRule>& out) {
    out.clear();
    if (v.IsNull()) return;
    if (!v.IsSequence()) {
      bad(path, m, "expected a list of rules, got " + describe(v));
      return;
    }
    seen(path, m);
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string rule_path = path + "[" + std::to_string(i) + "]";
      const YAML::Node& rn = v[i];
      const YAML::Mark rm = mark_of(rn, m);
      if (!rn.IsMap()) {
        bad(rule_path, rm, "expected a map with topics, apis and mode, got " + describe(rn));
        continue;
      }
      seen(rule_path, rm);
      PolicyRule rule;
      bool has_mode = false;
      each_field(rn, rule_path, "policy.rules[]", rm,
                 [&](const std::string& key, const YAML::Node& fv, const std::string& fp,
                     const YAML::Mark& fm) {
                   if (key == "topics") {
                     string_field(fv, fp, fm, rule.topics);
                   } else if (key == "apis") {
                     apis_field(fv, fp, fm, rule.apis);
                   } else if (key == "mode") {
                     has_mode = true;
                     mode_field(fv, fp, fm, *find_key("policy.rules[].mode"), rule.mode);
                   } else if (key == "reroute") {
                     bool_field(fv, fp, fm, rule.reroute);
                   }
                 });
      if (!has_mode) problem(rm, rule_path + ": missing 'mode' (enforce, observe or off)");
      out.push_back(std::move(rule));
    }
  }

  void apis_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                  std::vector<std::string>& out) {
    std::vector<std::pair<std::string, YAML::Mark>> items;
    if (v.IsScalar()) {
      items.emplace_back(v.Scalar(), m);
    } else if (v.IsSequence()) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].IsScalar()) {
          bad(path, mark_of(v[i], m), "expected API names, got " + describe(v[i]));
          return;
        }
        items.emplace_back(v[i].Scalar(), mark_of(v[i], m));
      }
    } else if (!v.IsNull()) {
      bad(path, m, "expected a list of API names, got " + describe(v));
      return;
    }
    seen(path, m);
    for (const auto& [name, im] : items) {
      bool known = false;
      for (std::string_view a : policy_api_names()) known = known || a == name;
      if (!known) {
        const std::string s = closest_name(name, policy_api_names());
        problem(im, path + ": unknown API " + quoted(name) +
                        (s.empty() ? " (valid: " + join(policy_api_names()) + ")"
                                   : " (did you mean " + quoted(s) + "?)"));
        continue;
      }
      out.push_back(name);
    }
  }

  void top(const YAML::Node& root) {
    each_field(root, "", "", root.Mark(),
               [&](const std::string&, const YAML::Node& v, const std::string& p,
                   const YAML::Mark& m) { key_field(v, p, m); });
  }

  // One key of the table (each_field let only known keys through): a section
  // recurses, a list or map goes to its hand-written parser, a scalar is
  // parsed by its kind straight into its Config member.
  void key_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m) {
    const KeySpec& spec = *find_key(path);
    if (spec.kind == Kind::kSection) {
      seen(path, m);
      each_field(v, path, path, m,
                 [&](const std::string&, const YAML::Node& fv, const std::string& fp,
                     const YAML::Mark& fm) { key_field(fv, fp, fm); });
      return;
    }
    if (spec.field == nullptr) {
      for (const HandParsed& h : hand_parsed()) {
        if (h.path == path && h.parse != nullptr) (this->*h.parse)(v, path, m);
      }
      return;
    }
    const UintKind uint_kind = spec.kind == Kind::kSize       ? UintKind::kSize
                               : spec.kind == Kind::kDuration ? UintKind::kDuration
                                                              : UintKind::kPlain;
    std::visit(
        [&](auto* member) {
          using T = std::remove_pointer_t<decltype(member)>;
          if constexpr (std::is_same_v<T, bool>) {
            bool_field(v, path, m, *member);
          } else if constexpr (std::is_same_v<T, std::string>) {
            if (spec.kind == Kind::kChoice) {
              choice_field(v, path, m, spec, *member);
            } else {
              string_field(v, path, m, *member);
            }
          } else if constexpr (std::is_same_v<T, HostPort>) {
            host_port_field(v, path, m, *member);
          } else if constexpr (std::is_same_v<T, Mode>) {
            mode_field(v, path, m, spec, *member);
          } else {
            uint_field(v, path, m, *member, uint_kind);
          }
        },
        spec.field(r_.config));
  }

 public:
  // Keys whose parser is written by hand (lists and maps; the rule keys are
  // parsed inside rules_field). Every one must be a row of config/keys.def.
  struct HandParsed {
    std::string_view path;
    void (Parser::*parse)(const YAML::Node&, const std::string&, const YAML::Mark&);
  };
  static const std::vector<HandParsed>& hand_parsed() {
    static const std::vector<HandParsed> kHand = {
        {"bootstrap_servers", &Parser::parse_bootstrap},
        {"broker_ports.map", &Parser::parse_broker_map},
        {"policy.rules", &Parser::parse_rules},
        {"policy.rules[].topics", nullptr},
        {"policy.rules[].apis", nullptr},
        {"policy.rules[].mode", nullptr},
        {"policy.rules[].reroute", nullptr},
    };
    return kHand;
  }

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

}  // namespace

const std::map<std::string, std::vector<std::string_view>>& config_schema_keys() {
  static const std::map<std::string, std::vector<std::string_view>> kKeys = [] {
    std::map<std::string, std::vector<std::string_view>> keys;
    for (const KeySpec& k : config_keys()) keys[std::string(k.parent())].push_back(k.name());
    return keys;
  }();
  return kKeys;
}

std::vector<std::string_view> hand_parsed_config_keys() {
  std::vector<std::string_view> out;
  for (const auto& h : Parser::hand_parsed()) out.push_back(h.path);
  return out;
}

LoadResult parse_config_string(std::string_view text, const std::string& name) {
  LoadResult r;
  r.config.source_file = name;
  Parser(r, name).parse(text);
  return r;
}

LoadResult parse_config_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    // An ifstream opens a directory and reads nothing: that is no config.
    LoadResult r;
    r.config.source_file = path;
    r.problems.push_back(Problem{path, 0, 0, "is a directory, not a configuration file"});
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoadResult r;
    r.config.source_file = path;
    r.problems.push_back(Problem{path, 0, 0, "cannot read the file"});
    return r;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_config_string(ss.str(), path);
}

}  // namespace epochgate::config
