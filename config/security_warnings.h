// config/security_warnings.h: settings epochgate accepts that weaken what a
// security review expects (docs/security.md), each said once in words an
// operator can act on: logged at start, printed by --check-config and
// listed in /debug/config. Never refuses anything (config/loader.cc does).
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace epochgate::config {

/// One line per weakening setting in `c` ("<key>: <what it allows>"), in a
/// fixed order; empty when there is none.
std::vector<std::string> security_warnings(const Config& c);

/// `warnings` as a JSON array of strings.
std::string security_warnings_json(const std::vector<std::string>& warnings);

}  // namespace epochgate::config
