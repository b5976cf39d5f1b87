// config/keys.h: the table of every configuration key (rows in
// config/keys.def), and what each row says: dotted name, type, default,
// bounds, whether a reload applies it, where the Helm chart sets it, and its
// doc line. The loader, validate_config, /debug/config, merge_live and
// restart_required_changes walk it; docs/config.md and the chart's
// values.schema.json are checked against it (tests/config/keys_*). Holds no
// parsing or I/O itself.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"

namespace epochgate::config {

/// What a key holds; decides its parser, its JSON, its docs "Type" and its
/// JSON-schema type.
enum class Kind {
  kSection,       ///< a map of more keys
  kHostPort,      ///< "host:port"
  kHost,          ///< host name or address (checked by validate_config)
  kString,
  kPath,          ///< a file path (a string)
  kBool,
  kInt,           ///< unsigned integer
  kPort,          ///< unsigned integer 0..65535
  kSize,          ///< bytes, or with KiB/MiB/GiB
  kDuration,      ///< milliseconds, or with ms/s/m/h
  kMode,          ///< enforce | observe | off
  kChoice,        ///< one of `choices` (or the default)
  kHostPortList,  ///< list of host:port, or one comma-separated string (by hand)
  kPortMap,       ///< node id -> port (by hand)
  kRules,         ///< policy rules (by hand)
  kGlob,          ///< topic glob in a rule
  kApiList,       ///< API group names in a rule
};

/// Live: a valid reload applies it at once. Restart: read at start only; a
/// reload that changes it is logged as needing a restart.
enum class Reload { kLive, kRestart };

/// Pointer to the Config member a scalar key is stored in.
using FieldPtr = std::variant<bool*, uint16_t*, int32_t*, uint32_t*, uint64_t*, std::string*,
                              HostPort*, Mode*>;

/// One row of config/keys.def.
struct KeySpec {
  std::string_view path;          ///< "limits.max_frame_bytes"; "policy.rules[].mode" for items
  Kind kind;
  std::string_view default_text;  ///< as YAML; equals Config{} (tested)
  uint64_t min = 0;               ///< integer kinds: validate_config's range
  uint64_t max = 0;
  std::string_view choices;       ///< kChoice/kMode: "a|b|c"
  Reload reload;
  /// "config": under config.<path> in the chart; "chart": its template sets
  /// it; "none": not settable through the chart; else the chart value path.
  std::string_view chart;
  std::string_view doc;
  /// Scalars: the member it is stored in; nullptr for sections, lists, maps, items.
  FieldPtr (*field)(Config&) = nullptr;
  /// Leaves stored in Config (not sections, not items): compare and copy it.
  bool (*same)(const Config&, const Config&) = nullptr;
  void (*copy)(const Config& from, Config& to) = nullptr;

  /// "limits" for "limits.max_frame_bytes", "policy.rules[]" for a rule key, "" at the top.
  std::string_view parent() const;
  /// The last component: "max_frame_bytes".
  std::string_view name() const;
  /// The first component: the top-level key a reload reports.
  std::string_view top() const;
  /// Split `choices`.
  std::vector<std::string_view> choice_list() const;
  bool is_integer() const;
};

/// Every row, in the order of config/keys.def (which is /debug/config's order).
const std::vector<KeySpec>& config_keys();

/// The row named `path`, or nullptr.
const KeySpec* find_key(std::string_view path);

/// Read-only view of a scalar key's member (spec.field must be set).
FieldPtr field_of(const KeySpec& spec, const Config& c);

/// Names used in docs/config.md's "Type" column and the JSON-schema type.
std::string_view kind_doc_name(Kind k);
std::string_view kind_schema_type(Kind k);
std::string_view kind_name(Kind k);

}  // namespace epochgate::config
