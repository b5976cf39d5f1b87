// config/config_text.h: what the loader and the validator both say about
// values: quoting, joining key lists, and whether a value is one of a key's
// choices. Internal to config/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/keys.h"

namespace epochgate::config::detail {

using Keys = std::vector<std::string_view>;

// Its default is always accepted too (upstream_sasl.mechanism: "" = no login).
inline bool is_choice(const KeySpec& spec, std::string_view value) {
  if (!spec.default_text.empty() && spec.default_text == "\"\"" && value.empty()) return true;
  for (std::string_view c : spec.choice_list()) {
    if (c == value) return true;
  }
  return false;
}

inline std::string join(const Keys& keys) {
  std::string out;
  for (std::string_view k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

inline std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

}  // namespace epochgate::config::detail
