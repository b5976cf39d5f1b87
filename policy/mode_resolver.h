// policy/mode_resolver.h: compiles the policy rules of the configuration
// (topic globs with * and ?, API groups) into a lookup of the fencing mode for
// a (topic, API group) pair (docs/architecture.md section 7: enforce | observe | off).
// Must never: allocate or lock on lookup, or do I/O.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace epochgate::policy {

/// The API groups a rule can name. Names (api_group_name) match the config
/// keys and are the `api` label of `epochgate_fenced_partitions_total`.
enum class ApiGroup : uint8_t {
  kProduce,
  kFetch,
  kListOffsets,
  kOffsetForLeaderEpoch,
  kShare,      ///< ShareFetch, ShareAcknowledge
  kPersister,  ///< Initialize/Read/Write/Delete ShareGroupState, ReadShareGroupStateSummary
};
inline constexpr size_t kApiGroupCount = 6;
/// Group names in enum order; also the `group` values of the schema rows
/// (codec/schema/api_keys.schema).
inline constexpr std::string_view kApiGroupNames[kApiGroupCount] = {
    "produce", "fetch", "list_offsets", "offset_for_leader_epoch", "share", "persister"};
const char* api_group_name(ApiGroup g);
/// The group named `name`; kProduce when unknown (compile-time use on the
/// generated rows, whose names the generator checks).
constexpr ApiGroup api_group_of(std::string_view name) {
  for (size_t i = 0; i < kApiGroupCount; ++i)
    if (kApiGroupNames[i] == name) return static_cast<ApiGroup>(i);
  return ApiGroup::kProduce;
}
/// Parses a config name ("produce", "fetch", ...); false when unknown.
bool parse_api_group(std::string_view name, ApiGroup& out);
/// "enforce" | "observe" | "off" (a local copy of config::mode_name, so policy
/// does not need the config library).
const char* mode_label(config::Mode m);

/// True when `text` matches `pattern` (`*` any run, `?` one character).
bool glob_match(std::string_view pattern, std::string_view text);

/// First matching rule wins; no match: the default mode (enforce unless the
/// configuration says otherwise) for every group.
class ModeResolver {
 public:
  ModeResolver() = default;
  /// Compiles `cfg.rules` and `cfg.default_mode`. Unknown API names in a rule
  /// are ignored (config validation reports them); a rule left with no known
  /// API then applies to none.
  explicit ModeResolver(const config::PolicyConfig& cfg);

  /// Mode for `topic` and `group`.
  config::Mode resolve(std::string_view topic, ApiGroup group) const;
  /// The `reroute` flag of the first rule matching `topic` for Produce
  /// (false when none matches); the mode still comes from resolve().
  bool reroutes(std::string_view topic) const;
  bool has_rules() const { return !rules_.empty(); }
  /// Some rule has `reroute: true`.
  bool has_reroute_rules() const { return any_reroute_; }

 private:
  struct Rule {
    std::string pattern;
    bool match_all = false;  ///< pattern is "*"
    std::array<bool, kApiGroupCount> groups{};
    config::Mode mode = config::Mode::kEnforce;
    bool reroute = false;
  };
  std::vector<Rule> rules_;
  config::Mode default_mode_ = config::Mode::kEnforce;
  bool any_reroute_ = false;
};

}  // namespace epochgate::policy
