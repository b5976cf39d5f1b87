// tests/config/cli_test.cc: the command line: flags override the file,
// --check-config prints file:line:col problems and sets the exit code, usage
// errors suggest the closest flag, and config/example.yaml passes the check.
#include "config/cli.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace epochgate::config {
namespace {

CliResult parse(std::vector<std::string> args) {
  args.insert(args.begin(), "epochgate");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_cli(static_cast<int>(argv.size()), argv.data(), "9.9.9");
}

class CliTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = ::testing::TempDir() + "/cli_" + std::to_string(getpid()) + "_" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const auto& f : files_) std::remove(f.c_str());
  }
  std::vector<std::string> files_;
};

TEST_F(CliTest, HelpAndVersion) {
  auto r = parse({"--help"});
  EXPECT_EQ(r.action, CliAction::kHelp);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--check-config FILE"), std::string::npos);
  r = parse({"-V"});
  EXPECT_EQ(r.action, CliAction::kVersion);
  EXPECT_EQ(r.output, "epochgate 9.9.9\n");
}

TEST_F(CliTest, FlagsAloneMakeARunnableConfig) {
  auto r = parse({"--bootstrap", "k1:9092,k2:9093", "--listen=0.0.0.0:29092", "--workers", "2",
                  "--advertise-host", "gw.example", "--broker-port-base", "30000", "--log-level",
                  "debug", "--log-format", "json", "--no-admin"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.errors;
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_EQ(r.config.bootstrap_servers.size(), 2u);
  EXPECT_EQ(r.config.bootstrap_servers[1], (HostPort{"k2", 9093}));
  EXPECT_EQ(r.config.listen, (HostPort{"0.0.0.0", 29092}));
  EXPECT_EQ(r.config.workers, 2u);
  EXPECT_EQ(r.config.effective_advertise_host(), "gw.example");
  EXPECT_EQ(r.config.broker_ports.base, 30000);
  EXPECT_EQ(r.config.logging.level, "debug");
  EXPECT_EQ(r.config.logging.format, "json");
  EXPECT_FALSE(r.config.admin.enabled);
  EXPECT_EQ(r.config_path, "");
}

TEST_F(CliTest, FlagsOverrideTheFile) {
  const std::string path = write("override.yaml",
                                 "listen: 127.0.0.1:9092\n"
                                 "bootstrap_servers: [file-broker:9092]\n"
                                 "workers: 8\n"
                                 "admin:\n  enabled: false\n"
                                 "policy:\n  default_mode: observe\n");
  auto r = parse({"--config", path, "--workers", "3", "--bootstrap", "flag-broker:9092", "--admin",
                  "127.0.0.1:19644"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.errors;
  EXPECT_EQ(r.config.workers, 3u);
  ASSERT_EQ(r.config.bootstrap_servers.size(), 1u);
  EXPECT_EQ(r.config.bootstrap_servers[0].host, "flag-broker");
  EXPECT_TRUE(r.config.admin.enabled);  // --admin turns it on
  EXPECT_EQ(r.config.admin.listen.port, 19644);
  EXPECT_EQ(r.config.policy.default_mode, Mode::kObserve);  // untouched by flags
  EXPECT_EQ(r.config.source_file, path);
  EXPECT_EQ(r.config_path, path);
  EXPECT_TRUE(r.overrides.workers.has_value());
}

TEST_F(CliTest, ProblemsFromFlagsNameTheFlag) {
  auto r = parse({"--bootstrap", "k:9092", "--workers", "300", "--log-level", "loud"});
  EXPECT_EQ(r.action, CliAction::kError);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.errors.find("--workers: workers: 300 is out of range (0..256)"), std::string::npos)
      << r.errors;
  EXPECT_NE(r.errors.find("--log-level: logging.level: 'loud' is not one of"), std::string::npos)
      << r.errors;
}

TEST_F(CliTest, FlagCanCreateAPortClashWithTheFile) {
  const std::string path =
      write("clash.yaml", "bootstrap_servers: [k:9092]\nadmin:\n  listen: 127.0.0.1:9700\n");
  auto r = parse({"--config", path, "--listen", "127.0.0.1:9700"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.errors.find(path + ":3:11: admin.listen: port clash: 9700 is also the bootstrap "
                                 "listener (listen at --listen)"),
            std::string::npos)
      << r.errors;
}

TEST_F(CliTest, MissingBootstrapIsAnError) {
  auto r = parse({});
  EXPECT_EQ(r.action, CliAction::kError);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.errors.find("<command line>: bootstrap_servers: at least one upstream broker is "
                          "required"),
            std::string::npos)
      << r.errors;
}

TEST_F(CliTest, CheckConfigValidFileExitsZero) {
  const std::string path = write("ok.yaml", "bootstrap_servers: [k:9092]\n");
  auto r = parse({"--check-config", path});
  EXPECT_EQ(r.action, CliAction::kCheckConfig);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, path + ": OK\n");
  EXPECT_TRUE(r.errors.empty());
}

TEST_F(CliTest, CheckConfigNoFilesSaysWhatWasNotChecked) {
  const std::string path = write("nofiles.yaml", "bootstrap_servers: [k:9092]\n");
  auto r = parse({"--check-config", path, "--no-files"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.check_files);
  EXPECT_EQ(r.output, path + ": OK (keys and values; files not opened: --no-files)\n");
  auto full = parse({"--check-config", path});
  EXPECT_TRUE(full.check_files);
  EXPECT_EQ(full.origins.count("bootstrap_servers"), 1u);
  auto misuse = parse({"--bootstrap", "k:9092", "--no-files"});
  EXPECT_EQ(misuse.exit_code, 2);
  EXPECT_NE(misuse.errors.find("--no-files goes with --check-config"), std::string::npos);
}

TEST_F(CliTest, ReadyFileIsOptIn) {
  EXPECT_EQ(parse({"--bootstrap", "k:9092"}).ready_file, "");
  auto r = parse({"--bootstrap", "k:9092", "--ready-file", "/run/epochgate.ready"});
  ASSERT_EQ(r.action, CliAction::kRun) << r.errors;
  EXPECT_EQ(r.ready_file, "/run/epochgate.ready");
  EXPECT_EQ(parse({"--bootstrap", "k:9092", "--ready-file="}).exit_code, 2);
}

TEST_F(CliTest, CheckConfigPrintsEveryProblemAndExitsOne) {
  const std::string path = write("bad.yaml",
                                 "bootstrap_servers: [k:9092]\n"
                                 "listn: 127.0.0.1:9092\n"
                                 "limits:\n"
                                 "  high_watermark_bytes: 1024\n"
                                 "  low_watermark_bytes: 4096\n");
  auto r = parse({"--check-config", path});
  EXPECT_EQ(r.action, CliAction::kCheckConfig);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.errors,
            path + ":2:1: unknown key 'listn' at the top level (did you mean 'listen'?)\n" + path +
                ":5:24: limits.low_watermark_bytes: low watermark (4096) must be below the high "
                "watermark (1024)\n");
}

TEST_F(CliTest, CheckConfigSyntaxErrorIsLocated) {
  const std::string path = write("syntax.yaml", "bootstrap_servers: [k:9092\nworkers: 1\n");
  auto r = parse({"--check-config", path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.errors.rfind(path + ":", 0), 0u);
  EXPECT_NE(r.errors.find("YAML syntax error"), std::string::npos) << r.errors;
}

TEST_F(CliTest, CheckConfigOfMissingFile) {
  auto r = parse({"--check-config", "/nonexistent/x.yaml"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.errors, "/nonexistent/x.yaml: cannot read the file\n");
}

TEST_F(CliTest, ExampleConfigPassesCheckConfig) {
  const std::string path = std::string(EPOCHGATE_SOURCE_DIR) + "/config/example.yaml";
  auto r = parse({"--check-config", path});
  EXPECT_EQ(r.exit_code, 0) << r.errors;
  EXPECT_EQ(r.output, path + ": OK\n");
  EXPECT_EQ(r.config.broker_ports.base, 19092);
  EXPECT_EQ(r.config.policy.rules.size(), 2u);
}

TEST_F(CliTest, UsageErrors) {
  auto r = parse({"--listn", "x:1"});
  EXPECT_EQ(r.action, CliAction::kError);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.errors.find("unknown flag '--listn' (did you mean '--listen'?)"), std::string::npos);
  r = parse({"--config"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.errors.find("--config needs a value"), std::string::npos);
  r = parse({"--listen", "nohost"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.errors.find("--listen: bad host:port 'nohost'"), std::string::npos);
  r = parse({"--workers", "two"});
  EXPECT_EQ(r.exit_code, 2);
  r = parse({"--broker-port-base", "70000"});
  EXPECT_EQ(r.exit_code, 2);
  r = parse({"--admin", "127.0.0.1:1", "--no-admin"});
  EXPECT_EQ(r.exit_code, 2);
  r = parse({"--no-admin=yes"});
  EXPECT_EQ(r.exit_code, 2);
  r = parse({"stray"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.errors.find("Try 'epochgate --help'"), std::string::npos);
}

TEST_F(CliTest, ReloadReappliesFlags) {
  const std::string path = write("reload.yaml", "bootstrap_servers: [k:9092]\nworkers: 8\n");
  auto r = parse({"--config", path, "--workers", "2"});
  ASSERT_EQ(r.action, CliAction::kRun);
  std::ofstream(path) << "bootstrap_servers: [k:9092]\nworkers: 16\nlogging:\n  level: warn\n";
  const LoadResult again = load_effective_config(r.config_path, r.overrides);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.config.workers, 2u);  // the flag still wins
  EXPECT_EQ(again.config.logging.level, "warn");
}

}  // namespace
}  // namespace epochgate::config
