// config/cli.h: the epochgate command line. Parses argv into what main()
// should do (run, check a config, print help or version, or fail with a
// message) and the effective Config: file first, then flags on top, then
// validation. Never prints and never exits itself: main() does both with
// what CliResult carries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "config/loader.h"

namespace epochgate::config {

/// Settings given as flags. They win over the file, also on every reload.
struct CliOverrides {
  std::optional<std::vector<HostPort>> bootstrap;  ///< --bootstrap HOST:PORT[,...]
  std::optional<HostPort> listen;                  ///< --listen HOST:PORT
  std::optional<std::string> advertise_host;       ///< --advertise-host HOST
  std::optional<uint16_t> broker_port_base;        ///< --broker-port-base N
  std::optional<HostPort> admin;                   ///< --admin HOST:PORT (enables admin)
  bool no_admin = false;                           ///< --no-admin
  std::optional<uint32_t> workers;                 ///< --workers N
  std::optional<std::string> log_level;            ///< --log-level L
  std::optional<std::string> log_format;           ///< --log-format text|json
};

/// What main() should do.
enum class CliAction {
  kRun,          ///< start the proxy with `config`
  kCheckConfig,  ///< --check-config: print `output` / `errors`, exit with exit_code
  kHelp,         ///< print `output`, exit 0
  kVersion,      ///< print `output`, exit 0
  kError,        ///< print `errors` to stderr, exit with exit_code (1 config, 2 usage)
};

struct CliResult {
  CliAction action = CliAction::kError;
  Config config;                  ///< effective config (kRun; kCheckConfig when valid)
  std::string config_path;        ///< --config / --check-config file, "" if none
  CliOverrides overrides;         ///< to re-apply on reload (load_effective_config)
  std::vector<Problem> problems;  ///< config problems, in file order then flags
  Origins origins;                ///< where each setting came from (locates later problems)
  /// --check-config: also open every file the config names (main() does,
  /// it links the loaders); false with --no-files.
  bool check_files = true;
  /// --ready-file PATH: where the started process writes its bound
  /// addresses ("-": stdout); "" writes nothing.
  std::string ready_file;
  std::string output;             ///< text for stdout (help, version, "FILE: OK")
  std::string errors;             ///< text for stderr: one problem per line, or usage error
  int exit_code = 2;              ///< 0 ok; 1 invalid config; 2 bad usage
};

/// Parses `argv` (argv[0] is the program name). Flags: --config FILE,
/// --check-config FILE, --bootstrap HOST:PORT[,...], --listen HOST:PORT,
/// --advertise-host HOST, --broker-port-base N, --admin HOST:PORT, --no-admin,
/// --workers N, --log-level L, --log-format text|json, --no-files (with
/// --check-config: do not open the files the config names), --ready-file PATH,
/// --help, --version.
/// Both "--flag VALUE" and "--flag=VALUE" work. A config about to run (or be
/// checked) must name at least one bootstrap server.
CliResult parse_cli(int argc, const char* const* argv, std::string_view version);

/// Applies `overrides` to `config`, recording each overridden setting in
/// `origins` as coming from its flag (so problems name the flag).
void apply_overrides(const CliOverrides& overrides, Config& config, Origins& origins);

/// Loads `path` (if not empty), applies `overrides`, validates as for a run.
/// This is what a reload does (ConfigWatcher's loader).
LoadResult load_effective_config(const std::string& path, const CliOverrides& overrides);

/// The --help text.
std::string cli_usage();

}  // namespace epochgate::config
