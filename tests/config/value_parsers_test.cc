// tests/config/value_parsers_test.cc: single values as the file and the
// flags spell them: host:port forms, sizes, durations, suggestions, secrets.
#include "config/value_parsers.h"

#include <gtest/gtest.h>

#include "config/to_json.h"

namespace epochgate::config {
namespace {

TEST(ValueParsersTest, HostPortForms) {
  std::string why;
  EXPECT_EQ(parse_host_port("kafka-0.kafka.svc:9092", &why), (HostPort{"kafka-0.kafka.svc", 9092}));
  EXPECT_EQ(parse_host_port("10.1.2.3:0", &why), (HostPort{"10.1.2.3", 0}));
  EXPECT_EQ(parse_host_port("[fe80::1]:65535", &why), (HostPort{"fe80::1", 65535}));
  for (const char* bad : {"", ":9092", "host:", "host:-1", "host:65536", "ho st:1", "-a:1",
                          "a..b:1", "[::1]", "[zz::]:1", "::1:9092", "host:9092x"}) {
    EXPECT_FALSE(parse_host_port(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
}

TEST(ValueParsersTest, HostPortRoundTripsThroughToString) {
  EXPECT_EQ((HostPort{"::1", 9092}).to_string(), "[::1]:9092");
  EXPECT_EQ((HostPort{"a", 1}).to_string(), "a:1");
}

TEST(ValueParsersTest, SizesAndDurations) {
  EXPECT_EQ(parse_size("4096"), 4096u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("100MiB"), 104857600u);
  EXPECT_EQ(parse_size("1GiB"), 1073741824u);
  EXPECT_FALSE(parse_size("1GB"));
  EXPECT_FALSE(parse_size("-1"));
  EXPECT_FALSE(parse_size("99999999999999999999GiB"));
  EXPECT_EQ(parse_duration_ms("250"), 250u);
  EXPECT_EQ(parse_duration_ms("250ms"), 250u);
  EXPECT_EQ(parse_duration_ms("30s"), 30000u);
  EXPECT_EQ(parse_duration_ms("5m"), 300000u);
  EXPECT_EQ(parse_duration_ms("2h"), 7200000u);
  EXPECT_FALSE(parse_duration_ms("1.5s"));
  EXPECT_FALSE(parse_duration_ms("s"));
}

TEST(ValueParsersTest, ModesAndSuggestions) {
  EXPECT_EQ(parse_mode("observe"), Mode::kObserve);
  EXPECT_FALSE(parse_mode("Observe"));
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(closest_name("bootstrap_server", {"listen", "bootstrap_servers"}), "bootstrap_servers");
  EXPECT_EQ(closest_name("qqqq", {"listen", "workers"}), "");
  EXPECT_EQ(closest_name("high_watermark", {"high_watermark_bytes", "low_watermark_bytes"}),
            "high_watermark_bytes");
}

TEST(ValueParsersTest, SecretKeysAreRedacted) {
  for (const char* k : {"password", "sasl_password", "client_secret", "token", "ssl_private_key",
                        "sasl_mechanism", "credentials"}) {
    EXPECT_TRUE(is_secret_key(k)) << k;
    EXPECT_EQ(redact_value(k, "hunter2"), "<redacted>") << k;
  }
  for (const char* k : {"listen", "advertise_host", "topics", "level"}) {
    EXPECT_FALSE(is_secret_key(k)) << k;
    EXPECT_EQ(redact_value(k, "v"), "v");
  }
  EXPECT_EQ(redact_value("password", ""), "");  // "not set" stays visible
}

}  // namespace
}  // namespace epochgate::config
