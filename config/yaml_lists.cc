// config/yaml_lists.cc: the config keys whose YAML is a list or a map
// (bootstrap_servers, broker_ports.map, policy.rules and a rule's apis),
// parsed by hand into their Config members with a located problem for each
// bad item. The scalar keys and the key table walk are config/loader.cc.
#include <limits>
#include <sstream>

#include "config/yaml_parser.h"

namespace epochgate::config::detail {

// A list of host:port, or one string with comma-separated entries.
void Parser::bootstrap_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
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

void Parser::broker_map_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
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

void Parser::rules_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
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

void Parser::apis_field(const YAML::Node& v, const std::string& path, const YAML::Mark& m,
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

}  // namespace epochgate::config::detail
