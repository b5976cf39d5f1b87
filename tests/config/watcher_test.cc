// tests/config/watcher_test.cc: hot reload on a real libuv loop: a file
// written valid then invalid gives on_valid then on_invalid with the running
// config kept; editor-style rename-over and SIGHUP both reload; a burst of
// writes is one reload; restart-only settings are reported and not applied.
// Every test ends with uv_loop_close() == 0.
#include "config/watcher.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include "config/cli.h"
#include "metrics/logging.h"
#include "metrics/proxy_metrics.h"

namespace epochgate::config {
namespace {

using namespace std::chrono_literals;

const char* kBase =
    "listen: 127.0.0.1:9092\n"
    "bootstrap_servers: [k:9092]\n";

class WatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    uv_loop_init(&loop_);
    // A private directory per test: fs events from other files stay out.
    dir_ = ::testing::TempDir() + "/watcher_" + std::to_string(getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    mkdir(dir_.c_str(), 0700);
    path_ = dir_ + "/epochgate.yaml";
    write(std::string(kBase) + "policy:\n  default_mode: enforce\n");
    metrics::set_log_output([](std::string_view) {});  // keep test output quiet
  }

  void TearDown() override {
    if (watcher_) {
      bool closed = false;
      watcher_->close([&] { closed = true; });
      uv_run(&loop_, UV_RUN_DEFAULT);
      EXPECT_TRUE(closed);
      watcher_.reset();
    }
    EXPECT_EQ(uv_loop_close(&loop_), 0);
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
    metrics::set_log_output(nullptr);
  }

  void write(const std::string& text) { std::ofstream(path_, std::ios::trunc) << text; }

  // Replaces the file the way editors and ConfigMap updates do: write a
  // temporary file, then rename it over the original.
  void replace(const std::string& text) {
    const std::string tmp = dir_ + "/.epochgate.yaml.tmp";
    std::ofstream(tmp) << text;
    ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
  }

  void start_watcher(WatcherOptions options = {}) {
    options.debounce_ms = 50;
    const LoadResult initial = load_effective_config(path_, {});
    ASSERT_TRUE(initial.ok());
    WatcherCallbacks cb;
    cb.on_valid = [this](const Config& applied, const std::vector<std::string>& restart) {
      ++valid_;
      last_applied_ = applied;
      last_restart_ = restart;
    };
    cb.on_invalid = [this](const std::vector<Problem>& problems) {
      ++invalid_;
      last_problems_ = problems;
    };
    watcher_ = std::make_unique<ConfigWatcher>(
        &loop_, path_, initial.config, [this] { return load_effective_config(path_, {}); }, cb,
        &metrics_, options);
    ASSERT_EQ(watcher_->start(), 0);
  }

  // Runs the loop until `done()` or `timeout`; returns done().
  bool run_until(const std::function<bool()>& done, std::chrono::milliseconds timeout = 5s) {
    uv_timer_t tick;
    uv_timer_init(&loop_, &tick);
    struct State {
      std::function<bool()> done;
      std::chrono::steady_clock::time_point deadline;
    } st{done, std::chrono::steady_clock::now() + timeout};
    tick.data = &st;
    uv_timer_start(
        &tick,
        [](uv_timer_t* t) {
          auto* s = static_cast<State*>(t->data);
          if (s->done() || std::chrono::steady_clock::now() > s->deadline) uv_stop(t->loop);
        },
        5, 5);
    uv_run(&loop_, UV_RUN_DEFAULT);
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop_, UV_RUN_NOWAIT);
    return done();
  }

  // Lets the loop run for `d` (to show that nothing else happens).
  void settle(std::chrono::milliseconds d) {
    run_until([] { return false; }, d);
  }

  uv_loop_t loop_;
  std::string dir_;
  std::string path_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  metrics::ProxyMetrics metrics_{registry_};
  std::unique_ptr<ConfigWatcher> watcher_;
  int valid_ = 0;
  int invalid_ = 0;
  Config last_applied_;
  std::vector<std::string> last_restart_;
  std::vector<Problem> last_problems_;

  double reload_count(const char* result) {
    for (const auto& f : registry_->Collect()) {
      if (f.name != "epochgate_config_reloads_total") continue;
      for (const auto& m : f.metric) {
        if (m.label[0].value == result) return m.counter.value;
      }
    }
    return -1;
  }
};

TEST_F(WatcherTest, ValidThenInvalidFileKeepsTheRunningConfig) {
  start_watcher();
  write(std::string(kBase) + "policy:\n  default_mode: observe\nlimits:\n  max_connections: 5\n");
  ASSERT_TRUE(run_until([&] { return valid_ == 1; }));
  EXPECT_EQ(last_applied_.policy.default_mode, Mode::kObserve);
  EXPECT_EQ(last_applied_.limits.max_connections, 5u);
  EXPECT_TRUE(last_restart_.empty());
  EXPECT_EQ(watcher_->running().policy.default_mode, Mode::kObserve);
  EXPECT_EQ(reload_count("success"), 1);

  write(std::string(kBase) + "policy:\n  default_mode: sometimes\n");
  ASSERT_TRUE(run_until([&] { return invalid_ == 1; }));
  ASSERT_EQ(last_problems_.size(), 1u);
  EXPECT_EQ(last_problems_[0].to_string(),
            path_ + ":4:17: policy.default_mode: 'sometimes' is not one of enforce, observe, off");
  // The running config is the last valid one.
  EXPECT_EQ(watcher_->running().policy.default_mode, Mode::kObserve);
  EXPECT_EQ(watcher_->running().limits.max_connections, 5u);
  EXPECT_EQ(valid_, 1);
  EXPECT_EQ(reload_count("failure"), 1);
  EXPECT_EQ(watcher_->reloads_ok(), 1u);
  EXPECT_EQ(watcher_->reloads_failed(), 1u);
}

TEST_F(WatcherTest, RenameOverTheFileIsSeen) {
  start_watcher();
  replace(std::string(kBase) + "logging:\n  level: debug\n");
  ASSERT_TRUE(run_until([&] { return valid_ == 1; }));
  EXPECT_EQ(last_applied_.logging.level, "debug");
  // The watch survives the rename: a second replacement is seen too.
  replace(std::string(kBase) + "logging:\n  level: error\n");
  ASSERT_TRUE(run_until([&] { return valid_ == 2; }));
  EXPECT_EQ(last_applied_.logging.level, "error");
}

TEST_F(WatcherTest, BurstOfWritesIsOneReload) {
  start_watcher();
  for (int i = 1; i <= 5; ++i) {
    write(std::string(kBase) + "refresher:\n  interval_ms: " + std::to_string(1000 * i) + "\n");
  }
  ASSERT_TRUE(run_until([&] { return valid_ >= 1; }));
  settle(300ms);
  EXPECT_EQ(valid_, 1);
  EXPECT_EQ(last_applied_.refresher.interval_ms, 5000u);
}

TEST_F(WatcherTest, AFileWrittenBesideTheConfigDoesNotHoldAChangeBack) {
  // A log kept in the config's directory, written every 10 ms (more often
  // than the 50 ms debounce): the change is still seen (by max_wait_ms).
  WatcherOptions o;
  o.max_wait_ms = 300;
  start_watcher(o);
  const std::string log_path = dir_ + "/epochgate.log";
  std::ofstream log(log_path);
  uv_timer_t writer;
  uv_timer_init(&loop_, &writer);
  writer.data = &log;
  uv_timer_start(
      &writer,
      [](uv_timer_t* t) { *static_cast<std::ofstream*>(t->data) << "a log line\n" << std::flush; },
      0, 10);
  settle(100ms);  // the log's burst is under way
  write(std::string(kBase) + "logging:\n  level: warn\n");
  // Without the bound the debounce restarts every 10 ms and never fires.
  const bool seen = run_until([&] { return valid_ == 1; });
  uv_close(reinterpret_cast<uv_handle_t*>(&writer), nullptr);
  uv_run(&loop_, UV_RUN_NOWAIT);
  log.close();
  std::remove(log_path.c_str());
  ASSERT_TRUE(seen) << "a config change was held back while another file kept changing";
  EXPECT_EQ(last_applied_.logging.level, "warn");
}

TEST_F(WatcherTest, UnchangedContentIsNoReload) {
  start_watcher();
  write(std::string(kBase) + "policy:\n  default_mode: enforce\n");  // same bytes
  settle(300ms);
  EXPECT_EQ(valid_ + invalid_, 0);
  EXPECT_EQ(reload_count("success"), 0);
}

TEST_F(WatcherTest, SighupReloadsEvenWithoutAChange) {
  WatcherOptions o;
  o.watch_file = false;
  start_watcher(o);
  ASSERT_EQ(uv_kill(getpid(), SIGHUP), 0);
  ASSERT_TRUE(run_until([&] { return valid_ == 1; }));
  EXPECT_EQ(reload_count("success"), 1);
}

TEST_F(WatcherTest, RestartOnlyChangesAreReportedNotApplied) {
  start_watcher();
  write(
      "listen: 127.0.0.1:19092\nbootstrap_servers: [k:9092]\nworkers: 7\n"
      "admin:\n  listen: 127.0.0.1:19644\npolicy:\n  hold_timeout_ms: 100\n");
  ASSERT_TRUE(run_until([&] { return valid_ == 1; }));
  EXPECT_EQ(last_restart_, (std::vector<std::string>{"listen", "workers", "admin"}));
  EXPECT_EQ(last_applied_.listen.port, 9092);  // still the running listener
  EXPECT_EQ(last_applied_.workers, 0u);
  EXPECT_EQ(last_applied_.admin.listen.port, 9644);
  EXPECT_EQ(last_applied_.policy.hold_timeout_ms, 100u);  // live part applied
}

TEST_F(WatcherTest, DeletedFileIsRefusedAndRunningConfigStays) {
  start_watcher();
  std::remove(path_.c_str());
  ASSERT_TRUE(run_until([&] { return invalid_ == 1; }));
  ASSERT_EQ(last_problems_.size(), 1u);
  EXPECT_NE(last_problems_[0].reason.find("cannot read"), std::string::npos);
  EXPECT_EQ(watcher_->running().bootstrap_servers.size(), 1u);
  // Restoring it is a reload again.
  write(std::string(kBase));
  ASSERT_TRUE(run_until([&] { return valid_ == 1; }));
}

TEST(WatcherPlanTest, LiveAndRestartSettings) {
  Config a;
  Config b = a;
  b.policy.default_mode = Mode::kOff;
  b.limits.max_connections = 1;
  b.refresher.interval_ms = 1000;
  b.logging.level = "debug";
  b.drain_timeout_ms = 1;
  EXPECT_TRUE(restart_required_changes(a, b).empty());
  b.advertise_host = "x";
  b.bootstrap_servers = {{"k", 1}};
  b.broker_ports.base = 100;
  EXPECT_EQ(restart_required_changes(a, b),
            (std::vector<std::string>{"advertise_host", "bootstrap_servers", "broker_ports"}));
  const Config m = merge_live(a, b);
  EXPECT_EQ(m.policy.default_mode, Mode::kOff);
  EXPECT_EQ(m.logging.level, "debug");
  EXPECT_EQ(m.drain_timeout_ms, 1u);
  EXPECT_EQ(m.advertise_host, "");
  EXPECT_TRUE(m.bootstrap_servers.empty());
  EXPECT_EQ(m.broker_ports.base, 0);
}

}  // namespace
}  // namespace epochgate::config
