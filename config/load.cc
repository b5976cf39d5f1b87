// config/load.cc: a whole load, parse then validate, and the problems it
// reports in file order.
#include "config/loader.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace epochgate::config {

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

}  // namespace epochgate::config
