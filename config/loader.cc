// config/loader.cc: YAML -> Config (structure and types), then whole-config
// validation (ranges, relations, port clashes). yaml-cpp throws on syntax
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

#include "config/keys.h"
#include "config/tls_rules.h"
#include "config/value_parsers.h"

namespace epochgate::config {
namespace {

using Keys = std::vector<std::string_view>;

// Its default is always accepted too (upstream_sasl.mechanism: "" = no login).
bool is_choice(const KeySpec& spec, std::string_view value) {
  if (!spec.default_text.empty() && spec.default_text == "\"\"" && value.empty()) return true;
  for (std::string_view c : spec.choice_list()) {
    if (c == value) return true;
  }
  return false;
}

std::string join(const Keys& keys) {
  std::string out;
  for (std::string_view k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

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

// ---- validation -------------------------------------------------------------

class Checker {
 public:
  explicit Checker(const Origins& origins) : origins_(origins) {
    auto it = origins.find("");
    root_ = it != origins.end() ? it->second : Origin{"<config>", 0, 0, true};
  }

  // False when the setting or a section above it could not be read.
  bool usable(std::string_view path) const {
    std::string p(path);
    while (true) {
      auto it = origins_.find(p);
      if (it != origins_.end() && !it->second.valid) return false;
      const auto cut = p.find_last_of(".[");
      if (cut == std::string::npos) return true;
      p.resize(cut);
    }
  }

  // Origin of the setting, else of the closest section above it, else the document.
  Origin where(std::string_view path) const {
    std::string p(path);
    while (!p.empty()) {
      auto it = origins_.find(p);
      if (it != origins_.end()) return it->second;
      const auto cut = p.find_last_of(".[");
      if (cut == std::string::npos) break;
      p.resize(cut);
    }
    return root_;
  }

  bool set_explicitly(std::string_view path) const { return origins_.count(std::string(path)) > 0; }

  void report(std::string_view path, const std::string& reason) {
    const Origin o = where(path);
    problems_.push_back(Problem{o.file, o.line, o.column, std::string(path) + ": " + reason});
  }

  // value in [lo, hi]
  void range(std::string_view path, uint64_t value, uint64_t lo, uint64_t hi) {
    if (!usable(path)) return;
    if (value < lo || value > hi) {
      report(path, std::to_string(value) + " is out of range (" + std::to_string(lo) + ".." +
                       std::to_string(hi) + ")");
    }
  }

  std::string location_text(std::string_view path) const {
    const Origin o = where(path);
    if (o.line > 0) return o.file + ":" + std::to_string(o.line);
    return o.file;
  }

  std::vector<Problem> take() { return std::move(problems_); }

 private:
  const Origins& origins_;
  Origin root_;
  std::vector<Problem> problems_;
};

std::string canonical_host(const std::string& h) {
  if (h == "localhost") return "127.0.0.1";
  if (h == "[::]" || h.empty()) return "::";
  return h;
}

bool is_wildcard(const std::string& h) {
  return h == "0.0.0.0" || h == "::";
}

bool hosts_overlap(const std::string& a, const std::string& b) {
  const std::string ca = canonical_host(a), cb = canonical_host(b);
  return ca == cb || is_wildcard(ca) || is_wildcard(cb);
}

struct Bind {
  std::string path;   // setting that asks for the port
  std::string label;  // how a person names it
  std::string host;
  uint16_t port;
};

// Cipher settings OpenSSL would refuse when the contexts are built: refused
// here, with the setting's line, before anything starts.
void check_tls_ciphers(const Config& c, Checker& ck) {
  struct Side {
    const char* prefix;
    bool on;
    const std::string& list;
    const std::string& suites;
  };
  const Side sides[] = {{"tls", c.tls.enabled(), c.tls.cipher_list, c.tls.cipher_suites},
                        {"upstream_tls", c.upstream_tls.enabled, c.upstream_tls.cipher_list,
                         c.upstream_tls.cipher_suites}};
  for (const Side& s : sides) {
    const std::string list_key = std::string(s.prefix) + ".cipher_list";
    const std::string suites_key = std::string(s.prefix) + ".cipher_suites";
    if (ck.usable(list_key) && (s.on || ck.set_explicitly(list_key))) {
      const std::string why = tls12_cipher_list_problem(s.list);
      if (!why.empty()) ck.report(list_key, why);
    }
    if (ck.usable(suites_key) && (s.on || ck.set_explicitly(suites_key))) {
      const std::string why = tls13_suites_problem(s.suites);
      if (!why.empty()) ck.report(suites_key, why);
    }
  }
}

bool loopback_host(const std::string& h) {
  return h.rfind("127.", 0) == 0 || h == "::1" || h == "[::1]" || h == "localhost";
}

// Sidecar credential mode lends epochgate's principal to whoever connects:
// only where that is the pod itself (loopback), a client proved who it is
// (a required certificate), or the operator said the network is the
// boundary.
void check_identity_lending(const Config& c, Checker& ck) {
  const auto& s = c.upstream_sasl;
  const char* key = "upstream_sasl.on_behalf_of_clients";
  if (!s.on_behalf_of_clients || s.allow_remote_clients || !ck.usable(key)) return;
  if (c.tls.enabled() && c.tls.client_auth == "required") return;
  const std::string& broker_host =
      c.broker_ports.bind_host.empty() ? c.listen.host : c.broker_ports.bind_host;
  for (const std::string* host : {&c.listen.host, &broker_host}) {
    if (loopback_host(*host)) continue;
    ck.report(key, "lends epochgate's SASL principal to every client that can reach " +
                       quoted(*host) +
                       ": listen on loopback, require client certificates (tls.client_auth: "
                       "required), or set upstream_sasl.allow_remote_clients: true");
    return;
  }
}

void check_port_clashes(const Config& c, Checker& ck) {
  const std::string broker_host =
      c.broker_ports.bind_host.empty() ? c.listen.host : c.broker_ports.bind_host;
  std::vector<Bind> binds;
  if (ck.usable("listen") && c.listen.port != 0) {
    binds.push_back({"listen", "the bootstrap listener", c.listen.host, c.listen.port});
  }
  if (c.admin.enabled && ck.usable("admin.listen") && ck.usable("admin.enabled") &&
      c.admin.listen.port != 0) {
    binds.push_back(
        {"admin.listen", "the admin listener", c.admin.listen.host, c.admin.listen.port});
  }
  const bool map_usable = ck.usable("broker_ports.map") && ck.usable("broker_ports.bind_host");
  if (map_usable) {
    for (const auto& [id, port] : c.broker_ports.map) {
      binds.push_back({"broker_ports.map." + std::to_string(id),
                       "node " + std::to_string(id) + "'s broker port", broker_host, port});
    }
  }
  for (std::size_t i = 0; i < binds.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const Bind& a = binds[j];
      const Bind& b = binds[i];
      if (a.port == b.port && hosts_overlap(a.host, b.host)) {
        ck.report(b.path, "port clash: " + std::to_string(b.port) + " is also " + a.label + " (" +
                              a.path + " at " + ck.location_text(a.path) + ")");
      }
    }
  }
  // base + node id for ids 0..max_node_id that have no map entry.
  const auto& b = c.broker_ports;
  if (b.base == 0 || !ck.usable("broker_ports.base") || !ck.usable("broker_ports.max_node_id") ||
      !map_usable) {
    return;
  }
  const uint32_t last = static_cast<uint32_t>(b.base) + static_cast<uint32_t>(b.max_node_id);
  for (const Bind& bind : binds) {
    if (bind.port < b.base || bind.port > last || !hosts_overlap(bind.host, broker_host)) continue;
    const int32_t id = static_cast<int32_t>(bind.port - b.base);
    if (b.map.count(id)) continue;  // that node uses its map entry instead
    ck.report(bind.path, "port clash: " + std::to_string(bind.port) + " is node " +
                             std::to_string(id) + "'s broker port under broker_ports.base " +
                             std::to_string(b.base) + " (node ids 0.." +
                             std::to_string(b.max_node_id) + " use base + id)");
  }
}

// Clients are handed advertise_host (or the listen host) as every broker's
// host: a wildcard there is an address no client can connect to (Kafka's
// advertised.listeners trap). One-port SNI routing advertises its pattern
// instead, so it is exempt.
void check_advertised_host(const Config& c, Checker& ck) {
  if (c.tls.sni.enabled() || !ck.usable("advertise_host") || !ck.usable("listen")) return;
  const std::string host = canonical_host(c.effective_advertise_host());
  if (!is_wildcard(host)) return;
  if (c.advertise_host.empty()) {
    ck.report("listen", c.listen.host +
                            " is a wildcard address and advertise_host is not set: clients would "
                            "be told to reach every broker at " + c.listen.host +
                            ":<port>; set advertise_host (--advertise-host) to the name or "
                            "address clients reach epochgate by");
  } else {
    ck.report("advertise_host", quoted(c.advertise_host) +
                                    " is a wildcard address, not one clients can connect to; "
                                    "use the name or address clients reach epochgate by");
  }
}

// upstream_tls files without `enabled: true` would leave every broker
// connection in plaintext (SASL PLAIN passwords included) without a word.
void check_upstream_tls_enabled(const Config& c, Checker& ck) {
  const UpstreamTlsConfig& u = c.upstream_tls;
  if (!ck.usable("upstream_tls") || u.enabled) return;
  const std::pair<const char*, const std::string*> files[] = {
      {"upstream_tls.ca_file", &u.ca_file},
      {"upstream_tls.cert_file", &u.cert_file},
      {"upstream_tls.key_file", &u.key_file},
      {"upstream_tls.key_password_file", &u.key_password_file}};
  for (const auto& [key, value] : files) {
    if (value->empty()) continue;
    ck.report(key, "is set but upstream_tls.enabled is not true: connections to the brokers "
                   "would be plaintext; add `enabled: true` (or remove the upstream_tls files)");
    return;  // one report says it
  }
}

// Rerouting is part of enforcing; a rule that turns fencing off would
// silently ignore its `reroute: true`.
void check_reroute_modes(const Config& c, Checker& ck) {
  const auto& rules = c.policy.rules;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string rp = "policy.rules[" + std::to_string(i) + "]";
    if (!rules[i].reroute || rules[i].mode != Mode::kOff || !ck.usable(rp + ".mode")) continue;
    ck.report(ck.set_explicitly(rp + ".reroute") ? rp + ".reroute" : rp,
              "reroute: true on a rule whose mode is off does nothing (rerouting needs "
              "enforce, or observe to count what it would reroute)");
  }
}

}  // namespace

void sort_problems(std::vector<Problem>& problems) {
  // File order; problems without a position (flags, defaults) last.
  std::stable_sort(problems.begin(), problems.end(), [](const Problem& a, const Problem& b) {
    const int la = a.line > 0 ? a.line : INT32_MAX;
    const int lb = b.line > 0 ? b.line : INT32_MAX;
    return la != lb ? la < lb : a.column < b.column;
  });
}

std::string Problem::to_string() const {
  if (line > 0) {
    return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + reason;
  }
  return file + ": " + reason;
}

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

LoadResult load_config_string(std::string_view text, const std::string& name) {
  LoadResult r = parse_config_string(text, name);
  if (r.origins.count("") == 0) return r;  // syntax error: nothing to validate
  auto more = validate_config(r.config, r.origins);
  r.problems.insert(r.problems.end(), more.begin(), more.end());
  sort_problems(r.problems);
  return r;
}

LoadResult load_config_file(const std::string& path) {
  LoadResult r = parse_config_file(path);
  if (r.origins.count("") == 0) return r;
  auto more = validate_config(r.config, r.origins);
  r.problems.insert(r.problems.end(), more.begin(), more.end());
  sort_problems(r.problems);
  return r;
}

std::vector<Problem> validate_config(const Config& c, const Origins& origins,
                                     const ValidateOptions& options) {
  Checker ck(origins);

  // Hosts and listeners.
  if (ck.usable("advertise_host") && !c.advertise_host.empty() && !valid_host(c.advertise_host)) {
    ck.report("advertise_host", quoted(c.advertise_host) + " is not a valid host name or address");
  }
  if (ck.usable("broker_ports.bind_host") && !c.broker_ports.bind_host.empty() &&
      !valid_host(c.broker_ports.bind_host)) {
    ck.report("broker_ports.bind_host",
              quoted(c.broker_ports.bind_host) + " is not a valid host name or address");
  }
  if (ck.usable("bootstrap_servers")) {
    if (c.bootstrap_servers.empty() && options.require_bootstrap) {
      ck.report("bootstrap_servers",
                "at least one upstream broker is required (bootstrap_servers or --bootstrap)");
    }
    for (std::size_t i = 0; i < c.bootstrap_servers.size(); ++i) {
      const std::string p = "bootstrap_servers[" + std::to_string(i) + "]";
      if (ck.usable(p) && c.bootstrap_servers[i].port == 0) {
        ck.report(p, "port 0 is not a broker port (1..65535)");
      }
    }
  }
  // Every integer key's bounds, from config/keys.def; relations below.
  for (const KeySpec& k : config_keys()) {
    if (!k.is_integer() || k.field == nullptr) continue;
    const uint64_t value = std::visit(
        [](auto* member) -> uint64_t {
          using T = std::remove_pointer_t<decltype(member)>;
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            if constexpr (std::is_signed_v<T>) {
              if (*member < 0) return 0;
            }
            return static_cast<uint64_t>(*member);
          } else {
            return 0;
          }
        },
        field_of(k, c));
    ck.range(k.path, value, k.min, k.max);
  }

  // Broker ports.
  const auto& b = c.broker_ports;
  if (b.base != 0 && ck.usable("broker_ports.base") && ck.usable("broker_ports.max_node_id") &&
      static_cast<uint32_t>(b.base) + static_cast<uint32_t>(b.max_node_id) > 65535) {
    ck.report("broker_ports.base", "base " + std::to_string(b.base) + " + max_node_id " +
                                       std::to_string(b.max_node_id) +
                                       " passes the highest port 65535");
  }
  for (const auto& [id, port] : b.map) {
    const std::string p = "broker_ports.map." + std::to_string(id);
    if (ck.usable(p) && port == 0)
      ck.report(p, "port 0 is not allowed for a mapped node (1..65535)");
  }
  check_port_clashes(c, ck);
  check_tls_ciphers(c, ck);
  check_identity_lending(c, ck);

  // Limits.
  const auto& l = c.limits;
  if (ck.usable("limits.low_watermark_bytes") && ck.usable("limits.high_watermark_bytes") &&
      l.low_watermark_bytes >= l.high_watermark_bytes) {
    const char* at = ck.set_explicitly("limits.low_watermark_bytes")
                         ? "limits.low_watermark_bytes"
                         : "limits.high_watermark_bytes";
    ck.report(at, "low watermark (" + std::to_string(l.low_watermark_bytes) +
                      ") must be below the high watermark (" +
                      std::to_string(l.high_watermark_bytes) + ")");
  }
  if (ck.usable("limits.buffer_budget_bytes") && ck.usable("limits.high_watermark_bytes") &&
      l.buffer_budget_bytes < l.high_watermark_bytes) {
    ck.report("limits.buffer_budget_bytes", "buffer budget (" +
                                                std::to_string(l.buffer_budget_bytes) +
                                                ") must be at least the high watermark (" +
                                                std::to_string(l.high_watermark_bytes) + ")");
  }

  // Policy.
  const auto& p = c.policy;
  // One report must never move an epoch backwards: at least two.
  if (ck.usable("policy.refresh_before_fence_ms") && ck.usable("policy.max_staleness_ms") &&
      p.refresh_before_fence_ms > p.max_staleness_ms) {
    ck.report("policy.refresh_before_fence_ms", std::to_string(p.refresh_before_fence_ms) +
                                                    " must not exceed policy.max_staleness_ms (" +
                                                    std::to_string(p.max_staleness_ms) + ")");
  }
  for (std::size_t i = 0; i < p.rules.size(); ++i) {
    const std::string rp = "policy.rules[" + std::to_string(i) + "].topics";
    if (ck.usable(rp) && p.rules[i].topics.empty()) ck.report(rp, "must not be empty (use \"*\")");
  }
  // A reroute that waits for its new leader asks for an urgent refresh,
  // which the refresher sends at most once per urgent_min_interval_ms: a
  // shorter wait can end before that refresh may go out (docs/rerouting.md).
  bool reroutes = false;
  for (const auto& r : p.rules) reroutes = reroutes || r.reroute;
  const auto& rr = c.reroute;
  if (reroutes && c.refresher.enabled && ck.usable("reroute.max_wait_ms") &&
      ck.usable("refresher.urgent_min_interval_ms") && rr.max_wait_ms > 0 &&
      rr.max_wait_ms < c.refresher.urgent_min_interval_ms) {
    const char* at = ck.set_explicitly("reroute.max_wait_ms") ? "reroute.max_wait_ms"
                                                              : "refresher.urgent_min_interval_ms";
    ck.report(at, "reroute.max_wait_ms (" + std::to_string(rr.max_wait_ms) +
                      ") must be 0 or at least refresher.urgent_min_interval_ms (" +
                      std::to_string(c.refresher.urgent_min_interval_ms) +
                      "): a reroute's urgent refresh may not go out sooner");
  }

  // A use is stamped at most every TopicEntry::kUseStampMs: a shorter idle
  // time would forget topics in constant use.
  const uint32_t idle = c.refresher.topic_idle_ms;
  if (ck.usable("refresher.topic_idle_ms") && idle > 0 && idle < 1000) {
    ck.report("refresher.topic_idle_ms",
              "must be 0 (topics stay) or at least 1000, got " + std::to_string(idle));
  }

  // TLS: file contents are checked when the contexts load (start and reload).
  const TlsConfig& t = c.tls;
  if (ck.usable("tls")) {
    if (t.enabled() && t.key_file.empty()) ck.report("tls.key_file", "tls.cert_file needs a key_file");
    if (!t.enabled()) {
      const std::pair<const char*, const std::string*> set[] = {
          {"tls.key_file", &t.key_file},
          {"tls.key_password_file", &t.key_password_file},
          {"tls.client_ca_file", &t.client_ca_file}};
      for (const auto& [k, v] : set)
        if (!v->empty()) ck.report(k, "needs tls.cert_file (client-facing TLS is off)");
      if (!t.sni.broker_host_pattern.empty())
        ck.report("tls.sni.broker_host_pattern", "needs tls.cert_file (SNI routing is TLS)");
    }
    if (t.client_auth != "none" && t.client_ca_file.empty() && ck.usable("tls.client_auth"))
      ck.report("tls.client_auth", t.client_auth + " needs tls.client_ca_file");
    const std::string& pat = t.sni.broker_host_pattern;
    if (!pat.empty()) {
      const auto at = pat.find("$(nodeId)");
      if (at == std::string::npos || pat.find("$(nodeId)", at + 1) != std::string::npos)
        ck.report("tls.sni.broker_host_pattern", quoted(pat) + " must contain $(nodeId) once");
      else if (pat.find_first_of(" :/*") != std::string::npos)
        ck.report("tls.sni.broker_host_pattern", quoted(pat) + " is not a host name pattern");
    }
  }
  const UpstreamTlsConfig& u = c.upstream_tls;
  if (ck.usable("upstream_tls") && u.enabled && (u.cert_file.empty() != u.key_file.empty()))
    ck.report(u.cert_file.empty() ? "upstream_tls.cert_file" : "upstream_tls.key_file",
              "upstream_tls.cert_file and key_file go together (mTLS)");

  // Refresher.
  const auto& sasl = c.upstream_sasl;
  if (ck.usable("upstream_sasl.on_behalf_of_clients") && sasl.on_behalf_of_clients &&
      !sasl.enabled())
    ck.report("upstream_sasl.on_behalf_of_clients", "needs upstream_sasl.mechanism");
  if (ck.usable("upstream_sasl") && sasl.enabled()) {
    if (sasl.mechanism == "OAUTHBEARER") {
      if (sasl.token_file.empty())
        ck.report("upstream_sasl.token_file", "OAUTHBEARER needs a token_file");
    } else {
      if (sasl.username.empty() && sasl.username_file.empty() && sasl.username_env.empty())
        ck.report("upstream_sasl.username",
                  sasl.mechanism + " needs username, username_file or username_env");
      if (sasl.password_file.empty() && sasl.password_env.empty())
        ck.report("upstream_sasl.password_file",
                  sasl.mechanism + " needs password_file or password_env");
    }
  }

  // Settings a start would otherwise run with silently.
  check_advertised_host(c, ck);
  check_upstream_tls_enabled(c, ck);
  check_reroute_modes(c, ck);

  // Choices (flags bypass the loader's choice check).
  for (const KeySpec& k : config_keys()) {
    if (k.kind != Kind::kChoice || k.field == nullptr || !ck.usable(k.path)) continue;
    const std::string& v = *std::get<std::string*>(field_of(k, c));
    if (is_choice(k, v)) continue;
    const Keys choices = k.choice_list();
    const std::string s = closest_name(v, choices);
    ck.report(k.path, quoted(v) + " is not one of " + join(choices) +
                          (s.empty() ? "" : " (did you mean " + quoted(s) + "?)"));
  }

  return ck.take();
}

}  // namespace epochgate::config
