// policy/mode_resolver.cc: glob matching and first-match rule lookup.
#include "policy/mode_resolver.h"

namespace epochgate::policy {

const char* api_group_name(ApiGroup g) {
  const auto i = static_cast<size_t>(g);
  return i < kApiGroupCount ? kApiGroupNames[i].data() : "unknown";
}

bool parse_api_group(std::string_view name, ApiGroup& out) {
  for (size_t i = 0; i < kApiGroupCount; ++i) {
    auto g = static_cast<ApiGroup>(i);
    if (name == api_group_name(g)) {
      out = g;
      return true;
    }
  }
  return false;
}

const char* mode_label(config::Mode m) {
  switch (m) {
    case config::Mode::kEnforce:
      return "enforce";
    case config::Mode::kObserve:
      return "observe";
    case config::Mode::kOff:
      return "off";
  }
  return "unknown";
}

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point for the last '*': linear in
  // practice, no recursion on untrusted topic names.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

ModeResolver::ModeResolver(const config::PolicyConfig& cfg) : default_mode_(cfg.default_mode) {
  for (const auto& r : cfg.rules) {
    Rule rule;
    rule.pattern = r.topics;
    rule.match_all = r.topics == "*";
    rule.mode = r.mode;
    rule.reroute = r.reroute;
    any_reroute_ = any_reroute_ || r.reroute;
    if (r.apis.empty()) {
      rule.groups.fill(true);
    } else {
      for (const auto& name : r.apis) {
        ApiGroup g;
        if (parse_api_group(name, g)) rule.groups[static_cast<size_t>(g)] = true;
      }
    }
    rules_.push_back(std::move(rule));
  }
}

config::Mode ModeResolver::resolve(std::string_view topic, ApiGroup group) const {
  for (const auto& r : rules_) {
    if (!r.groups[static_cast<size_t>(group)]) continue;
    if (r.match_all || glob_match(r.pattern, topic)) return r.mode;
  }
  return default_mode_;
}

bool ModeResolver::reroutes(std::string_view topic) const {
  for (const auto& r : rules_) {
    if (!r.groups[static_cast<size_t>(ApiGroup::kProduce)]) continue;
    if (r.match_all || glob_match(r.pattern, topic)) return r.reroute;
  }
  return false;
}

}  // namespace epochgate::policy
