// config/to_json.h: the effective configuration as JSON, for GET /debug/config.
// Secrets never leave the process: every string value passes through
// redact_value(), which hides values under secret-looking keys
// (is_secret_key: password, secret, token, credential, private_key, sasl_*).
// Nothing in Config is secret today; new secret fields are covered by naming
// them accordingly. Pure function, no I/O.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"

namespace epochgate::config {

/// Placeholder written instead of a secret value.
inline constexpr std::string_view kRedacted = "<redacted>";

/// `value`, or kRedacted when `key` names a secret (empty values stay empty,
/// so "not set" remains visible).
std::string redact_value(std::string_view key, std::string_view value);

/// One JSON object mirroring the YAML schema (docs/config.md), plus
/// "source_file" and "effective_advertise_host". Durations in ms, sizes in bytes.
std::string to_json(const Config& config);

}  // namespace epochgate::config
