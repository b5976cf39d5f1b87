// tests/policy/mode_resolver_test.cc: policy rules -> mode per (topic, API
// group): globs with * and ?, first match wins, defaults enforce everywhere.
#include <gtest/gtest.h>

#include "policy/mode_resolver.h"

namespace epochgate::policy {
namespace {

using config::Mode;

TEST(ModeResolver, GlobMatching) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*", "orders"));
  EXPECT_TRUE(glob_match("orders", "orders"));
  EXPECT_FALSE(glob_match("orders", "orders2"));
  EXPECT_TRUE(glob_match("ord?rs", "orders"));
  EXPECT_FALSE(glob_match("ord?rs", "ordrs"));
  EXPECT_TRUE(glob_match("logs.*", "logs.app"));
  EXPECT_FALSE(glob_match("logs.*", "log.app"));
  EXPECT_TRUE(glob_match("*.audit", "a.b.audit"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
  EXPECT_TRUE(glob_match("**", "x"));
  EXPECT_FALSE(glob_match("?", ""));
  // Pathological pattern stays fast (no exponential backtracking).
  std::string text(5000, 'a');
  EXPECT_FALSE(glob_match("*a*a*a*a*a*a*a*b", text));
}

TEST(ModeResolver, DefaultIsEnforceForEveryGroup) {
  ModeResolver r{config::PolicyConfig{}};
  for (size_t g = 0; g < kApiGroupCount; ++g)
    EXPECT_EQ(r.resolve("anything", static_cast<ApiGroup>(g)), Mode::kEnforce)
        << api_group_name(static_cast<ApiGroup>(g));
}

TEST(ModeResolver, FirstMatchingRuleWinsPerApiGroup) {
  config::PolicyConfig cfg;
  cfg.rules.push_back({"logs.*", {"produce"}, Mode::kObserve});
  cfg.rules.push_back({"logs.*", {}, Mode::kOff});
  cfg.rules.push_back({"payments", {"fetch", "share"}, Mode::kObserve});
  ModeResolver r(cfg);
  EXPECT_EQ(r.resolve("logs.app", ApiGroup::kProduce), Mode::kObserve);
  EXPECT_EQ(r.resolve("logs.app", ApiGroup::kFetch), Mode::kOff);
  EXPECT_EQ(r.resolve("logs.app", ApiGroup::kPersister), Mode::kOff);
  EXPECT_EQ(r.resolve("payments", ApiGroup::kFetch), Mode::kObserve);
  EXPECT_EQ(r.resolve("payments", ApiGroup::kShare), Mode::kObserve);
  EXPECT_EQ(r.resolve("payments", ApiGroup::kProduce), Mode::kEnforce);
  EXPECT_EQ(r.resolve("orders", ApiGroup::kProduce), Mode::kEnforce);
}

TEST(ModeResolver, DefaultModeFromConfigAndUnknownApiNames) {
  config::PolicyConfig cfg;
  cfg.default_mode = Mode::kObserve;
  cfg.rules.push_back({"*", {"no_such_api"}, Mode::kOff});
  ModeResolver r(cfg);
  EXPECT_EQ(r.resolve("orders", ApiGroup::kProduce), Mode::kObserve);
}

TEST(ModeResolver, ApiGroupNamesRoundTrip) {
  for (size_t g = 0; g < kApiGroupCount; ++g) {
    ApiGroup parsed;
    ASSERT_TRUE(parse_api_group(api_group_name(static_cast<ApiGroup>(g)), parsed));
    EXPECT_EQ(parsed, static_cast<ApiGroup>(g));
  }
  ApiGroup x;
  EXPECT_FALSE(parse_api_group("metadata", x));
  EXPECT_STREQ(mode_label(Mode::kObserve), "observe");
}

}  // namespace
}  // namespace epochgate::policy
