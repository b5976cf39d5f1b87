// tests/metrics/logging_test.cc: log lines in text and JSON form (JSON lines
// checked by Python's json module), run-time level changes, the rate limiter,
// and the list of APIs whose bytes must never be logged.
#include "metrics/logging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace epochgate::metrics {
namespace {

class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_log_output([this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.emplace_back(line);
    });
    LogOptions o;
    o.level = "info";
    o.format = "text";
    o.rate_limit_per_sec = 10;
    ASSERT_TRUE(configure_logging(o));
  }
  void TearDown() override {
    set_log_output(nullptr);
    LogOptions o;
    configure_logging(o);
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

  // Every line must parse as one JSON object (python3 json module).
  void expect_valid_json_lines(const std::vector<std::string>& ls) {
    const std::string path = ::testing::TempDir() + "/log_" + std::to_string(getpid()) + ".jsonl";
    {
      std::ofstream out(path, std::ios::binary);
      for (const auto& l : ls) out << l << "\n";
    }
    const std::string cmd =
        "/usr/bin/python3 -c \"import json,sys\n"
        "for l in open(sys.argv[1], encoding='utf-8'):\n"
        "    o = json.loads(l)\n"
        "    assert isinstance(o, dict) and {'ts','level','logger','msg'} <= o.keys(), l\n\" " +
        path;
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    std::remove(path.c_str());
  }

  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST_F(LoggingTest, TextLinesCarryLevelComponentMessageAndFields) {
  auto lg = logger("proxy");
  log(*lg, spdlog::level::info, "client connected",
      {{"node", 3}, {"peer", "127.0.0.1:5000"}, {"note", "two words"}, {"ok", true}});
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 1u);
  const std::string& l = ls[0];
  EXPECT_NE(l.find(" info [proxy] client connected node=3 peer=127.0.0.1:5000 "
                   "note=\"two words\" ok=true"),
            std::string::npos)
      << l;
  EXPECT_EQ(l[4], '-');  // starts with an ISO-8601 timestamp
  EXPECT_EQ(l.find('\n'), std::string::npos);
}

TEST_F(LoggingTest, TextLinesCannotBeSplitByWireBytes) {
  auto lg = logger("proxy");
  log(*lg, spdlog::level::warn, "topic a\nFAKE line", {{"topic", "x\ny"}});
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(ls[0].find('\n'), std::string::npos) << ls[0];
}

TEST_F(LoggingTest, JsonLinesAreOneValidObjectEach) {
  ASSERT_TRUE(set_format("json"));
  auto lg = logger("policy");
  log(*lg, spdlog::level::warn, "fenced \"produce\"",
      {{"topic", std::string("t\x01\xff", 3)},
       {"partition", 7},
       {"epoch", int64_t{-1}},
       {"ratio", 0.5},
       {"enforce", false},
       {"msg", "shadowed"}});
  lg->info("plain spdlog call {}", 42);
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_EQ(ls[0].rfind("{\"ts\":\"", 0), 0u);
  EXPECT_NE(
      ls[0].find("\"level\":\"warn\",\"logger\":\"policy\",\"msg\":\"fenced \\\"produce\\\"\""),
      std::string::npos)
      << ls[0];
  EXPECT_NE(ls[0].find("\"partition\":7,\"epoch\":-1,\"ratio\":0.5,\"enforce\":false,"
                       "\"_msg\":\"shadowed\""),
            std::string::npos)
      << ls[0];
  EXPECT_NE(ls[1].find("\"msg\":\"plain spdlog call 42\""), std::string::npos);
  expect_valid_json_lines(ls);
}

TEST_F(LoggingTest, LevelChangesAtRunTimeForExistingAndNewLoggers) {
  auto lg = logger("refresher");
  log(*lg, spdlog::level::debug, "hidden");
  ASSERT_TRUE(set_level("debug"));
  EXPECT_EQ(current_level(), "debug");
  log(*lg, spdlog::level::debug, "shown");
  log(*logger("brand_new_component"), spdlog::level::debug, "also shown");
  ASSERT_TRUE(set_level("error"));
  log(*lg, spdlog::level::warn, "hidden again");
  EXPECT_FALSE(set_level("loud"));
  EXPECT_EQ(current_level(), "error");
  const auto ls = lines();
  ASSERT_EQ(ls.size(), 2u);
  EXPECT_NE(ls[0].find("shown"), std::string::npos);
  EXPECT_NE(ls[1].find("also shown"), std::string::npos);
}

TEST_F(LoggingTest, ConfigureRejectsUnknownValuesAndChangesNothing) {
  std::string error;
  LogOptions bad;
  bad.format = "xml";
  EXPECT_FALSE(configure_logging(bad, &error));
  EXPECT_NE(error.find("xml"), std::string::npos);
  bad.format = "json";
  bad.level = "chatty";
  EXPECT_FALSE(configure_logging(bad, &error));
  EXPECT_EQ(current_level(), "info");
}

TEST(RateLimitedSiteTest, AdmitsLimitPerSecondThenReportsSuppressed) {
  RateLimitedSite site("fence");
  int emitted = 0;
  for (int i = 0; i < 100; ++i) emitted += site.admit(5000 + i, 3).emit;
  EXPECT_EQ(emitted, 3);
  EXPECT_EQ(site.suppressed_total(), 97u);
  // Next second: the first line passes and carries the count to report.
  const auto d = site.admit(6001, 3);
  EXPECT_TRUE(d.emit);
  EXPECT_EQ(d.suppressed_before, 97u);
  EXPECT_EQ(site.admit(6002, 3).suppressed_before, 0u);
}

TEST(RateLimitedSiteTest, ZeroMeansUnlimited) {
  RateLimitedSite site("error");
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(site.admit(1000, 0).emit);
  EXPECT_EQ(site.suppressed_total(), 0u);
}

TEST_F(LoggingTest, StormIsCutToTheLimitAndSummarised) {
  set_rate_limit_per_sec(5);
  auto lg = logger("policy");
  RateLimitedSite site("fence");
  for (int i = 0; i < 1000; ++i) {
    site.log(*lg, spdlog::level::warn, "fenced", {{"partition", i}});
  }
  auto ls = lines();
  // One or two wall-clock seconds may be crossed: at most two budgets + one summary.
  EXPECT_GE(ls.size(), 5u);
  EXPECT_LE(ls.size(), 11u);
  site.flush(UINT64_MAX - 1);  // far later: the pending count must be written
  ls = lines();
  ASSERT_FALSE(ls.empty());
  EXPECT_NE(ls.back().find("suppressed"), std::string::npos) << ls.back();
  EXPECT_NE(ls.back().find("kind=fence"), std::string::npos) << ls.back();
  EXPECT_GE(site.suppressed_total(), 980u);
}

TEST_F(LoggingTest, ExitFlushWritesTheCurrentSecondsCount) {
  set_rate_limit_per_sec(1);
  auto lg = logger("proxy");
  RateLimitedSite site("frame_error");
  // Two lines in one second may straddle a boundary; retry until one was held.
  for (int i = 0; i < 10 && site.suppressed_total() == 0; ++i) {
    site.log(*lg, spdlog::level::warn, "bad frame", {});
    site.log(*lg, spdlog::level::warn, "bad frame", {});
  }
  ASSERT_GT(site.suppressed_total(), 0u);
  flush_suppressed_log_summaries(/*including_current_second=*/true);
  const auto ls = lines();
  ASSERT_FALSE(ls.empty());
  EXPECT_NE(ls.back().find("suppressed"), std::string::npos) << ls.back();
}

TEST_F(LoggingTest, MacroKeepsOneLimiterPerCallSite) {
  set_rate_limit_per_sec(2);
  auto lg = logger("proxy");
  for (int i = 0; i < 50; ++i) {
    EPOCHGATE_LOG_LIMITED(*lg, spdlog::level::err, "frame_error", "bad frame", {{"i", i}});
  }
  for (int i = 0; i < 50; ++i) {
    EPOCHGATE_LOG_LIMITED(*lg, spdlog::level::err, "other_error", "other");
  }
  const auto ls = lines();
  size_t bad = 0, other = 0;
  for (const auto& l : ls) {
    bad += l.find("bad frame") != std::string::npos;
    other += l.find("] other") != std::string::npos;
  }
  EXPECT_GE(bad, 2u);
  EXPECT_LE(bad, 4u);
  EXPECT_GE(other, 2u);
  EXPECT_LE(other, 4u);
}

TEST(LogPayloadRuleTest, CredentialCarryingApisAreNeverLoggable) {
  for (int16_t k : {17, 36, 38, 39, 40, 41, 51}) EXPECT_FALSE(may_log_payload(k)) << k;
  for (int16_t k : {0, 1, 2, 3, 18, 23}) EXPECT_TRUE(may_log_payload(k)) << k;
}

}  // namespace
}  // namespace epochgate::metrics
