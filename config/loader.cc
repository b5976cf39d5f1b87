// config/loader.cc: YAML -> Config (structure and types), then whole-config
// validation (config/validate.cc: ranges, relations, port clashes). yaml-cpp throws on syntax
// errors; that is caught here and turned into a located Problem, so nothing
// escapes to the caller. Never applies anything to a running process. The
// parser's scalars and its walk of the key table are here; its list and map
// keys are config/yaml_lists.cc.
#include "config/loader.h"

#include <sys/stat.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <type_traits>
#include <variant>

#include "config/yaml_parser.h"

namespace epochgate::config {
namespace detail {

void Parser::parse(std::string_view text) {
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

std::string Parser::describe(const YAML::Node& n) {
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

bool Parser::scalar(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                    const std::string& expected, std::string* out) {
  if (!v.IsScalar()) {
    bad(path, m, "expected " + expected + ", got " + describe(v));
    return false;
  }
  *out = v.Scalar();
  return true;
}

void Parser::bool_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                        bool& out) {
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

void Parser::string_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                          std::string& out) {
  if (!scalar(v, path, m, "a string", &out)) return;
  seen(path, m);
}

void Parser::choice_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
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

void Parser::mode_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                        const KeySpec& spec, Mode& out) {
  std::string s;
  choice_field(v, path, m, spec, s);
  if (auto mode = parse_mode(s)) out = *mode;
}

bool Parser::host_port_value(const std::string& text, const std::string& path, const YAML::Mark& m,
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

void Parser::host_port_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
                             HostPort& out) {
  std::string s;
  if (!scalar(v, path, m, "host:port", &s)) return;
  host_port_value(s, path, m, out);
}

void Parser::top(const YAML::Node& root) {
  each_field(root, "", "", root.Mark(),
             [&](const std::string&, const YAML::Node& v, const std::string& p,
                 const YAML::Mark& m) { key_field(v, p, m); });
}

// One key of the table (each_field let only known keys through): a section
// recurses, a list or map goes to its hand-written parser, a scalar is
// parsed by its kind straight into its Config member.
void Parser::key_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m) {
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

const std::vector<Parser::HandParsed>& Parser::hand_parsed() {
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

}  // namespace detail

using detail::Parser;

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
