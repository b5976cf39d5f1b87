// config/checker.h: Checker, which collects validation problems located at
// the setting they concern (or the closest section above it), and skips a
// setting the loader could not read. Internal to config/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.h"

namespace epochgate::config::detail {

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

}  // namespace epochgate::config::detail
