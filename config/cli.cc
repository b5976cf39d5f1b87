// config/cli.cc: argv -> CliResult. Flags are parsed strictly (unknown flags
// get the closest valid name); their values go through the same parsers as the
// YAML file and the same validation, so a flag cannot set what the file may not.
#include "config/cli.h"

#include <sstream>

#include "config/security_warnings.h"
#include "config/value_parsers.h"

namespace epochgate::config {
namespace {

struct FlagSpec {
  std::string_view name;
  bool takes_value;
};

constexpr FlagSpec kFlags[] = {
    {"--config", true},    {"--check-config", true},   {"--bootstrap", true},
    {"--listen", true},    {"--advertise-host", true}, {"--broker-port-base", true},
    {"--admin", true},     {"--no-admin", false},      {"--workers", true},
    {"--log-level", true}, {"--log-format", true},     {"--help", false},
    {"--version", false},  {"--no-files", false},     {"--ready-file", true},
};

const FlagSpec* find_flag(std::string_view name) {
  for (const FlagSpec& f : kFlags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// Every origin at `path` or below it now comes from `flag`.
void override_origin(Origins& origins, const std::string& path, const std::string& flag) {
  for (auto it = origins.begin(); it != origins.end();) {
    const std::string& k = it->first;
    const bool below = k.size() > path.size() && k.compare(0, path.size(), path) == 0 &&
                       (k[path.size()] == '.' || k[path.size()] == '[');
    it = (k == path || below) ? origins.erase(it) : std::next(it);
  }
  origins[path] = Origin{flag, 0, 0, true};
}

std::string problems_text(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& p : problems) out += p.to_string() + "\n";
  return out;
}

CliResult usage_error(std::string message) {
  CliResult r;
  r.action = CliAction::kError;
  r.exit_code = 2;
  r.errors = "epochgate: " + message + "\nTry 'epochgate --help'.\n";
  return r;
}

}  // namespace

std::string cli_usage() {
  return R"(Usage: epochgate [flags]

A transparent Kafka protocol proxy that enforces leader-epoch fencing.

  --config FILE              YAML configuration (docs/config.md); flags override it
  --check-config FILE        validate FILE (with any other flags) as a start would,
                             opening every certificate, key, CA and credential file it
                             names; print each problem as file:line:col: reason,
                             exit 0 if valid, 1 if not
  --no-files                 with --check-config: check keys and values only, open no
                             file (pipelines that render a config without its Secrets)
  --bootstrap HOST:PORT[,..] upstream Kafka brokers to bootstrap from
  --listen HOST:PORT         bootstrap listener for clients (default 127.0.0.1:9092)
  --advertise-host HOST      host put in rewritten broker addresses (default: listen host)
  --broker-port-base N       port of broker node id n is N + n (0: ephemeral)
  --admin HOST:PORT          admin HTTP server (/metrics, /healthz, /readyz, /debug/*),
                             default 127.0.0.1:9644
  --no-admin                 no admin HTTP server
  --workers N                event-loop threads (0: one per CPU the process may use, at most 256)
  --log-level LEVEL          trace, debug, info, warn, error, critical, off
  --log-format FORMAT        text or json (one JSON object per line)
  --ready-file PATH          once the listeners and the admin server are bound, write
                             "epochgate ready bootstrap=HOST:PORT admin=HOST:PORT" to
                             PATH (replaced atomically; "-": stdout). Addresses, not
                             readiness: /readyz says when clients may be sent
  --help                     this text
  --version                  print the version

Exit codes: 0 valid config, or a clean stop after a drain; 1 invalid config,
or a start-up failure (a port in use, an unreadable certificate; the reason
is logged); 2 bad usage.

Signals: SIGHUP reloads the configuration file (so does editing it);
SIGTERM/SIGINT drain and exit, a second one exits at once.
)";
}

void apply_overrides(const CliOverrides& o, Config& c, Origins& origins) {
  if (o.bootstrap) {
    c.bootstrap_servers = *o.bootstrap;
    override_origin(origins, "bootstrap_servers", "--bootstrap");
  }
  if (o.listen) {
    c.listen = *o.listen;
    override_origin(origins, "listen", "--listen");
  }
  if (o.advertise_host) {
    c.advertise_host = *o.advertise_host;
    override_origin(origins, "advertise_host", "--advertise-host");
  }
  if (o.broker_port_base) {
    c.broker_ports.base = *o.broker_port_base;
    override_origin(origins, "broker_ports.base", "--broker-port-base");
  }
  if (o.admin) {
    c.admin.enabled = true;
    c.admin.listen = *o.admin;
    override_origin(origins, "admin.listen", "--admin");
    override_origin(origins, "admin.enabled", "--admin");
  }
  if (o.no_admin) {
    c.admin.enabled = false;
    override_origin(origins, "admin.enabled", "--no-admin");
  }
  if (o.workers) {
    c.workers = *o.workers;
    override_origin(origins, "workers", "--workers");
  }
  if (o.log_level) {
    c.logging.level = *o.log_level;
    override_origin(origins, "logging.level", "--log-level");
  }
  if (o.log_format) {
    c.logging.format = *o.log_format;
    override_origin(origins, "logging.format", "--log-format");
  }
}

LoadResult load_effective_config(const std::string& path, const CliOverrides& overrides) {
  LoadResult r;
  if (!path.empty()) {
    r = parse_config_file(path);
    if (r.origins.count("") == 0) return r;  // unreadable or YAML syntax error
  } else {
    r.origins[""] = Origin{"<command line>", 0, 0, true};
  }
  apply_overrides(overrides, r.config, r.origins);
  ValidateOptions options;
  options.require_bootstrap = true;
  auto more = validate_config(r.config, r.origins, options);
  r.problems.insert(r.problems.end(), more.begin(), more.end());
  sort_problems(r.problems);
  return r;
}

CliResult parse_cli(int argc, const char* const* argv, std::string_view version) {
  CliOverrides o;
  std::string config_path;
  std::string check_path;
  bool want_help = false;
  bool want_version = false;
  bool admin_flag = false;
  bool no_files = false;
  std::string ready_file;

  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (arg == "-V") arg = "--version";
    if (arg.rfind("--", 0) != 0) return usage_error("unexpected argument '" + arg + "'");
    std::string value;
    bool has_inline_value = false;
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      has_inline_value = true;
    }
    const FlagSpec* spec = find_flag(arg);
    if (spec == nullptr) {
      std::vector<std::string_view> names;
      for (const FlagSpec& f : kFlags) names.push_back(f.name);
      const std::string s = closest_name(arg, names);
      return usage_error("unknown flag '" + arg + "'" +
                         (s.empty() ? "" : " (did you mean '" + s + "'?)"));
    }
    if (spec->takes_value && !has_inline_value) {
      if (i + 1 >= argc) return usage_error(arg + " needs a value");
      value = argv[++i];
    } else if (!spec->takes_value && has_inline_value) {
      return usage_error(arg + " takes no value");
    }

    std::string why;
    if (arg == "--help") {
      want_help = true;
    } else if (arg == "--version") {
      want_version = true;
    } else if (arg == "--config") {
      config_path = value;
    } else if (arg == "--check-config") {
      check_path = value;
    } else if (arg == "--bootstrap") {
      std::vector<HostPort> list;
      std::stringstream ss(value);
      std::string item;
      while (std::getline(ss, item, ',')) {
        auto hp = parse_host_port(item, &why);
        if (!hp) return usage_error("--bootstrap: bad host:port '" + item + "': " + why);
        list.push_back(*hp);
      }
      if (list.empty()) return usage_error("--bootstrap needs at least one HOST:PORT");
      o.bootstrap = list;
    } else if (arg == "--listen" || arg == "--admin") {
      auto hp = parse_host_port(value, &why);
      if (!hp) return usage_error(arg + ": bad host:port '" + value + "': " + why);
      if (arg == "--listen") {
        o.listen = *hp;
      } else {
        o.admin = *hp;
        admin_flag = true;
      }
    } else if (arg == "--advertise-host") {
      if (!valid_host(value)) return usage_error("--advertise-host: '" + value + "' is not a host");
      o.advertise_host = value;
    } else if (arg == "--broker-port-base") {
      auto n = parse_uint(value);
      if (!n || *n > 65535) {
        return usage_error("--broker-port-base: '" + value + "' is not a port (0..65535)");
      }
      o.broker_port_base = static_cast<uint16_t>(*n);
    } else if (arg == "--ready-file") {
      if (value.empty()) return usage_error("--ready-file needs a path (or - for stdout)");
      ready_file = value;
    } else if (arg == "--no-files") {
      no_files = true;
    } else if (arg == "--no-admin") {
      o.no_admin = true;
    } else if (arg == "--workers") {
      auto n = parse_uint(value);
      if (!n || *n > UINT32_MAX) return usage_error("--workers: '" + value + "' is not a number");
      o.workers = static_cast<uint32_t>(*n);
    } else if (arg == "--log-level") {
      o.log_level = value;
    } else if (arg == "--log-format") {
      o.log_format = value;
    }
  }

  if (want_help) {
    CliResult r;
    r.action = CliAction::kHelp;
    r.output = cli_usage();
    r.exit_code = 0;
    return r;
  }
  if (want_version) {
    CliResult r;
    r.action = CliAction::kVersion;
    r.output = "epochgate " + std::string(version) + "\n";
    r.exit_code = 0;
    return r;
  }
  if (admin_flag && o.no_admin) return usage_error("--admin and --no-admin contradict each other");
  if (no_files && check_path.empty()) return usage_error("--no-files goes with --check-config");
  if (!check_path.empty() && !config_path.empty() && check_path != config_path) {
    return usage_error("--config and --check-config name different files");
  }

  CliResult r;
  r.overrides = o;
  r.config_path = check_path.empty() ? config_path : check_path;
  LoadResult loaded = load_effective_config(r.config_path, o);
  r.problems = loaded.problems;
  r.config = loaded.config;
  r.origins = loaded.origins;
  r.check_files = !no_files;
  r.ready_file = ready_file;
  if (!check_path.empty()) {
    r.action = CliAction::kCheckConfig;
    if (loaded.ok()) {
      r.output = check_path + (no_files ? ": OK (keys and values; files not opened: --no-files)\n"
                                        : ": OK\n");
      r.exit_code = 0;
      for (const std::string& w : security_warnings(loaded.config))
        r.errors += check_path + ": warning: " + w + "\n";
    } else {
      r.errors = problems_text(loaded.problems);
      r.exit_code = 1;
    }
    return r;
  }
  if (!loaded.ok()) {
    r.action = CliAction::kError;
    r.errors = problems_text(loaded.problems);
    r.exit_code = 1;
    return r;
  }
  r.action = CliAction::kRun;
  r.exit_code = 0;
  return r;
}

}  // namespace epochgate::config
