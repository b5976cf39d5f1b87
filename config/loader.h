// config/loader.h: reads the YAML configuration into a Config and checks it.
// Every problem carries file:line:column and a reason a person can act on
// (unknown key with the closest valid name, wrong type, out-of-range value,
// bad host:port, bad mode, port clash). Loading never throws and never
// touches the running process: applying a Config is the caller's job.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace epochgate::config {

/// One thing wrong with a configuration. `line`/`column` are 1-based; 0 means
/// the problem has no position in a file (a command-line flag, a default).
struct Problem {
  std::string file;  ///< file name, or the flag ("--workers") for CLI values
  int line = 0;
  int column = 0;
  std::string reason;
  /// "file:line:col: reason", or "file: reason" without a position.
  std::string to_string() const;
};

/// Where a setting came from. `valid` is false when the value there could not
/// be read (wrong type...), so checks that need it are skipped rather than
/// reporting a second, misleading problem.
struct Origin {
  std::string file;
  int line = 0;
  int column = 0;
  bool valid = true;
};

/// Origins by setting path: "listen", "limits.high_watermark_bytes",
/// "broker_ports.map.3", "policy.rules[0].mode"; "" is the document itself.
using Origins = std::map<std::string, Origin, std::less<>>;

/// A loaded configuration: `config` holds defaults for anything missing or
/// unreadable; use it only when ok().
struct LoadResult {
  Config config;
  std::vector<Problem> problems;
  Origins origins;
  bool ok() const { return problems.empty(); }
};

/// Parses YAML text (`name` is used in problems and as Config::source_file)
/// and validates it (validate_config without require_bootstrap, since
/// --bootstrap may still supply the brokers).
LoadResult load_config_string(std::string_view text, const std::string& name = "<string>");
/// Same for a file; a file that cannot be read is one problem at line 0.
LoadResult load_config_file(const std::string& path);

/// Only the structural half of load: YAML syntax, known keys, value types and
/// representable ranges. The CLI calls this, applies flags, then validates.
LoadResult parse_config_string(std::string_view text, const std::string& name = "<string>");
LoadResult parse_config_file(const std::string& path);

struct ValidateOptions {
  /// Report a missing bootstrap_servers (true for a config about to run).
  bool require_bootstrap = false;
};

/// Semantic checks on a whole Config: ranges (ports, workers <= 256, sizes
/// > 0, watermarks low < high...), relations between settings, port clashes
/// among the bootstrap listener, the admin listener and broker ports (base +
/// node ids 0..max_node_id and map entries). Problems are located through
/// `origins` (settings without an origin are reported at the document).
std::vector<Problem> validate_config(const Config& config, const Origins& origins,
                                     const ValidateOptions& options = {});

/// Sorts problems by position (line, column); positionless ones go last.
void sort_problems(std::vector<Problem>& problems);

/// The keys valid in each YAML map, by path ("" for the top level,
/// "policy.rules[]" for a rule). Exposed for docs and tests.
/// Derived from config/keys.def.
const std::map<std::string, std::vector<std::string_view>>& config_schema_keys();

/// Table paths whose value the loader parses by hand (lists, maps, rule
/// keys) rather than by kind; tests check each is a row of config/keys.def.
std::vector<std::string_view> hand_parsed_config_keys();

}  // namespace epochgate::config
