// proxy/app/main.cc: the epochgate program: parse flags and config, set up
// logging, run the App. Exit codes (documented in --help and
// docs/troubleshooting.md): 0 clean (after a drain) or a valid config, 1 bad
// config or start-up failure, 2 bad usage.
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>

#include "config/cli.h"
#include "metrics/logging.h"
#include "proxy/app/app.h"
#include "proxy/app/config_files_check.h"
#include "proxy/app/version.h"

int main(int argc, char** argv) {
  using epochgate::config::CliAction;
  epochgate::config::CliResult cli = epochgate::config::parse_cli(argc, argv, epochgate::proxy::kVersion);
  switch (cli.action) {
    case CliAction::kHelp:
    case CliAction::kVersion:
      std::fputs(cli.output.c_str(), stdout);
      return 0;
    case CliAction::kCheckConfig:
      if (cli.exit_code == 0 && cli.check_files) {
        // What a start would refuse next: the files the config names.
        const auto problems = epochgate::proxy::check_config_files(cli.config, cli.origins);
        if (!problems.empty()) {
          for (const auto& p : problems) std::fprintf(stderr, "%s\n", p.to_string().c_str());
          return 1;
        }
      }
      std::fputs(cli.output.c_str(), stdout);
      std::fputs(cli.errors.c_str(), stderr);
      return cli.exit_code;
    case CliAction::kError:
      std::fputs(cli.errors.c_str(), stderr);
      return cli.exit_code;
    case CliAction::kRun:
      break;
  }
  epochgate::metrics::LogOptions log;
  log.level = cli.config.logging.level;
  log.format = cli.config.logging.format;
  log.rate_limit_per_sec = cli.config.logging.rate_limit_per_sec;
  std::string error;
  if (!epochgate::metrics::configure_logging(log, &error)) {
    std::fprintf(stderr, "epochgate: %s\n", error.c_str());
    return 1;
  }
  // Lines logged through spdlog's default logger go to the same sink (stderr).
  spdlog::set_default_logger(epochgate::metrics::logger("proxy"));
  // A client vanishing mid-write must not kill the process.
  std::signal(SIGPIPE, SIG_IGN);
  epochgate::proxy::App app(cli.config);
  app.set_reload_source(cli.config_path, cli.overrides);
  app.set_ready_file(cli.ready_file);
  return app.run();
}
