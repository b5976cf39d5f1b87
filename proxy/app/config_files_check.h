// proxy/app/config_files_check.h: the file half of `--check-config`. Opens
// every certificate, key, CA bundle and credential source a configuration
// names, the way a start (and the refresher's first login) would, so a
// pipeline that runs `epochgate --check-config` learns before a rollout what
// the start would refuse: a missing or unreadable file, a key that does not
// match its certificate, a certificate and key given the other way round, an
// empty credential file, an unset credential variable. Reads files only;
// never keeps or prints key material or secrets.
#pragma once

#include <vector>

#include "config/config.h"
#include "config/loader.h"

namespace epochgate::proxy {

/// Checks every file (and credential variable) `config` names. Each problem
/// is located at the setting that names the file (through `origins`, as the
/// loader locates its own problems) and its reason names the file and what
/// is wrong with it. `config` must have passed validate_config. Returns no
/// problems when every file would load at a start.
std::vector<config::Problem> check_config_files(const config::Config& config,
                                                const config::Origins& origins);

}  // namespace epochgate::proxy
