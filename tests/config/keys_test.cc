// tests/config/keys_test.cc: the key table (config/keys.def) against what
// uses it: the member defaults in config/config.h, the loader (every row is
// read, hand-parsed keys are rows, bounds are enforced), /debug/config, and
// reloads (Live rows are applied, Restart rows reported). The docs and the
// chart are checked by config_keys_consistent (tools/config_keys.py).
#include "config/keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>

#include "config/loader.h"
#include "config/to_json.h"
#include "config/watcher.h"

namespace epochgate::config {
namespace {

bool is_item(const KeySpec& k) { return k.parent().find('[') != std::string_view::npos; }

// A YAML document setting every key (sections nested, at any depth) to `value(k)`.
template <typename F>
void document_under(std::string_view section, const std::string& indent, F& value,
                    std::string& out) {
  for (const KeySpec& k : config_keys()) {
    if (k.parent() != section) continue;
    if (k.kind == Kind::kSection) {
      out += indent + std::string(k.name()) + ":\n";
      document_under(k.path, indent + "  ", value, out);
    } else {
      out += indent + std::string(k.name()) + ": " + value(k) + "\n";
    }
  }
}

template <typename F>
std::string document(F&& value) {
  std::string out;
  document_under("", "", value, out);
  return out;
}

std::string without_source(std::string json) {
  const auto cut = json.find(",\"listen\"");
  return cut == std::string::npos ? json : json.substr(cut);
}

TEST(KeysTest, RowDefaultsAreTheConfigStructDefaults) {
  const std::string yaml = document([](const KeySpec& k) { return std::string(k.default_text); });
  const LoadResult r = load_config_string(yaml, "defaults.yaml");
  for (const Problem& p : r.problems) ADD_FAILURE() << p.to_string() << "\n" << yaml;
  EXPECT_EQ(without_source(to_json(r.config)), without_source(to_json(Config{}))) << yaml;
  // The loader read every row (it records where each one came from).
  for (const KeySpec& k : config_keys()) {
    if (!is_item(k)) {
      EXPECT_TRUE(r.origins.count(std::string(k.path))) << k.path;
    }
  }
}

TEST(KeysTest, HandParsedKeysAreExactlyTheRowsWithoutAMember) {
  std::set<std::string_view> hand;
  for (std::string_view p : hand_parsed_config_keys()) {
    const KeySpec* k = find_key(p);
    ASSERT_NE(k, nullptr) << "the loader parses '" << p << "', which config/keys.def lacks";
    EXPECT_EQ(k->field, nullptr) << p << " has a member: let the loader parse it by kind";
    hand.insert(p);
  }
  for (const KeySpec& k : config_keys()) {
    if (k.kind != Kind::kSection && k.field == nullptr) {
      EXPECT_TRUE(hand.count(k.path)) << k.path << " has no parser in config/loader.cc";
    }
  }
}

TEST(KeysTest, EverySectionKeyIsKnownToTheLoaderAndNothingElse) {
  const auto& schema = config_schema_keys();
  std::size_t n = 0;
  for (const auto& [section, keys] : schema) {
    for (std::string_view key : keys) {
      const std::string path = section.empty() ? std::string(key) : section + "." + std::string(key);
      EXPECT_NE(find_key(path), nullptr) << path;
      ++n;
    }
  }
  EXPECT_EQ(n, config_keys().size());
}

TEST(KeysTest, IntegerBoundsAreEnforcedAtTheRowsLimits) {
  for (const KeySpec& k : config_keys()) {
    if (!k.is_integer() || k.field == nullptr) continue;
    const uint64_t type_max = std::visit(
        [](auto* m) -> uint64_t {
          using T = std::remove_pointer_t<decltype(m)>;
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            return static_cast<uint64_t>(std::numeric_limits<T>::max());
          } else {
            return 0;
          }
        },
        field_of(k, Config{}));
    auto problems_at = [&](uint64_t v) {
      const std::string text = std::to_string(v);
      const std::string yaml = document([&](const KeySpec& c) {
        return c.path == k.path ? text : std::string(c.default_text);
      });
      std::string out;
      for (const Problem& p : load_config_string(yaml, "b.yaml").problems) {
        if (p.reason.find(std::string(k.path) + ": ") == 0 &&
            p.reason.find("out of range") != std::string::npos)
          out += p.reason + "\n";
      }
      return out;
    };
    EXPECT_EQ(problems_at(k.min), "") << k.path;
    EXPECT_EQ(problems_at(k.max), "") << k.path;
    if (k.min > 0) {
      EXPECT_NE(problems_at(k.min - 1), "") << k.path << " below its minimum";
    }
    if (k.max < type_max) {
      EXPECT_NE(problems_at(k.max + 1), "") << k.path << " above its maximum";
    }
  }
}

// Some other valid value of the member a row names.
void change(const KeySpec& k, Config& c) {
  std::visit(
      [&](auto* m) {
        using T = std::remove_pointer_t<decltype(m)>;
        if constexpr (std::is_same_v<T, bool>) {
          *m = !*m;
        } else if constexpr (std::is_same_v<T, std::string>) {
          *m += "x";
        } else if constexpr (std::is_same_v<T, HostPort>) {
          m->port = static_cast<uint16_t>(m->port + 1);
        } else if constexpr (std::is_same_v<T, Mode>) {
          *m = *m == Mode::kOff ? Mode::kEnforce : Mode::kOff;
        } else {
          *m = static_cast<T>(*m + 1);
        }
      },
      k.field(c));
}

TEST(KeysTest, ReloadAppliesLiveRowsAndReportsRestartRows) {
  for (const KeySpec& k : config_keys()) {
    if (k.field == nullptr) continue;
    const Config running;
    Config next;
    change(k, next);
    const Config merged = merge_live(running, next);
    const std::vector<std::string> restart = restart_required_changes(running, next);
    if (k.reload == Reload::kLive) {
      EXPECT_EQ(to_json(merged), to_json(next)) << k.path << " is Live but a reload keeps it";
      EXPECT_TRUE(restart.empty()) << k.path;
    } else {
      EXPECT_EQ(to_json(merged), to_json(running)) << k.path << " is Restart but a reload applies it";
      EXPECT_EQ(restart, std::vector<std::string>{std::string(k.top())}) << k.path;
    }
  }
}

TEST(KeysTest, DebugConfigShowsEveryRow) {
  const std::string json = to_json(Config{});
  for (const KeySpec& k : config_keys()) {
    if (is_item(k)) continue;
    EXPECT_NE(json.find("\"" + std::string(k.name()) + "\":"), std::string::npos) << k.path;
  }
}

TEST(KeysTest, EmptyMechanismIsTheDocumentedDefaultAndAccepted) {
  // The chart's schema offers "" (no login); the loader must take it too.
  const LoadResult r = load_config_string("upstream_sasl:\n  mechanism: \"\"\n", "m.yaml");
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.problems[0].to_string());
  const LoadResult bad = load_config_string("upstream_sasl:\n  mechanism: PLAN\n", "m.yaml");
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_EQ(bad.problems[0].to_string(),
            "m.yaml:2:14: upstream_sasl.mechanism: 'PLAN' is not one of PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512, OAUTHBEARER (did you mean 'PLAIN'?)");
}

}  // namespace
}  // namespace epochgate::config
