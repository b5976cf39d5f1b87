// tests/config/loader_test.cc: the YAML schema and its validation. A table of
// broken configs, one per error kind (syntax, unknown key with suggestion,
// duplicate key, wrong type, out of range, bad host:port, bad mode, port
// clash...), each pinned to the exact file:line:col and reason a user sees.
#include "config/loader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace epochgate::config {
namespace {

struct BadCase {
  const char* name;
  const char* yaml;
  int line;
  int column;
  const char* reason;  // substring of the reason
};

// Each case must yield exactly one problem: no cascades from one mistake.
const BadCase kBadCases[] = {
    // Syntax.
    {"syntax_error", "listen: [127.0.0.1:9092\nworkers: 2\n", 2, 8, "YAML syntax error"},
    // Unknown keys, with the closest valid name.
    {"unknown_top_key", "listn: 127.0.0.1:9092\n", 1, 1,
     "unknown key 'listn' at the top level (did you mean 'listen'?)"},
    {"unknown_nested_key", "limits:\n  max_frame_byte: 1024\n", 2, 3,
     "unknown key 'max_frame_byte' in limits (did you mean 'max_frame_bytes'?)"},
    {"unknown_key_in_rule",
     "policy:\n  rules:\n    - topics: a\n      mod: observe\n      mode: off\n", 4, 7,
     "unknown key 'mod' in policy.rules[0] (did you mean 'mode'?)"},
    {"unknown_key_far_from_all", "zzzzzzzzzzzz: 1\n", 1, 1,
     "unknown key 'zzzzzzzzzzzz' at the top level (valid keys: listen, advertise_host"},
    {"duplicate_key", "workers: 2\nworkers: 3\n", 2, 1,
     "duplicate key 'workers' (first at line 1)"},
    // Wrong types.
    {"map_where_host_port", "listen:\n  host: a\n", 2, 3, "listen: expected host:port, got a map"},
    {"string_where_integer", "workers: many\n", 1, 10, "workers: expected an integer, got 'many'"},
    {"scalar_where_map", "admin: yes\n", 1, 8, "admin: expected a map, got 'yes'"},
    {"bad_boolean", "policy:\n  inject_epochs: maybe\n", 2, 18,
     "policy.inject_epochs: expected true or false, got 'maybe'"},
    {"map_where_list", "bootstrap_servers:\n  a: b\n", 2, 3,
     "bootstrap_servers: expected a list of host:port, got a map"},
    {"rules_not_a_list", "policy:\n  rules: all\n", 2, 10,
     "policy.rules: expected a list of rules, got 'all'"},
    {"bad_size", "limits:\n  max_frame_bytes: 10MB\n", 2, 20,
     "limits.max_frame_bytes: expected a size in bytes (e.g. 1048576 or 1MiB), got '10MB'"},
    {"bad_duration", "drain_timeout_ms: soon\n", 1, 19,
     "drain_timeout_ms: expected a duration in ms (e.g. 500 or 30s), got 'soon'"},
    // Out of range.
    {"workers_above_256", "workers: 300\n", 1, 10, "workers: 300 is out of range (0..256)"},
    {"negative_value", "drain_timeout_ms: -5\n", 1, 19,
     "-5 is out of range (must not be negative)"},
    {"port_above_65535", "broker_ports:\n  base: 70000\n", 2, 9,
     "broker_ports.base: 70000 is out of range (at most 65535)"},
    {"zero_size", "limits:\n  max_in_flight_per_connection: 0\n", 2, 33,
     "limits.max_in_flight_per_connection: 0 is out of range (1..1000000)"},
    {"no_partitions_per_request", "limits:\n  max_partitions_per_request: 0\n", 2, 31,
     "limits.max_partitions_per_request: 0 is out of range (1..100000000)"},
    {"frame_too_small", "limits:\n  max_frame_bytes: 10\n", 2, 20,
     "limits.max_frame_bytes: 10 is out of range (1024..2147483647)"},
    {"watermarks_inverted", "limits:\n  high_watermark_bytes: 1MiB\n  low_watermark_bytes: 2MiB\n",
     3, 24, "low watermark (2097152) must be below the high watermark (1048576)"},
    {"budget_below_high_watermark", "limits:\n  buffer_budget_bytes: 1024\n", 2, 24,
     "buffer budget (1024) must be at least the high watermark (4194304)"},
    {"refresh_after_staleness",
     "policy:\n  max_staleness_ms: 1000\n  refresh_before_fence_ms: 5s\n", 3, 28,
     "policy.refresh_before_fence_ms: 5000 must not exceed policy.max_staleness_ms (1000)"},
    {"reroute_wait_below_urgent_interval",
     "policy:\n  rules:\n    - topics: a\n      mode: enforce\n      reroute: true\n"
     "reroute:\n  max_wait_ms: 50\n",
     7, 16,
     "reroute.max_wait_ms (50) must be 0 or at least refresher.urgent_min_interval_ms (100)"},
    {"urgent_interval_above_reroute_wait",
     "policy:\n  rules:\n    - topics: a\n      mode: enforce\n      reroute: true\n"
     "refresher:\n  urgent_min_interval_ms: 500\n",
     7, 27,
     "reroute.max_wait_ms (150) must be 0 or at least refresher.urgent_min_interval_ms (500)"},
    {"hold_timeout_too_long", "policy:\n  hold_timeout_ms: 2m\n", 2, 20,
     "policy.hold_timeout_ms: 120000 is out of range (0..60000)"},
    {"one_report_rolls_back", "policy:\n  epoch_rollback_confirmations: 1\n", 2, 33,
     "policy.epoch_rollback_confirmations: 1 is out of range (2..100)"},
    {"refresher_interval_too_short", "refresher:\n  interval_ms: 10\n", 2, 16,
     "refresher.interval_ms: 10 is out of range (100..86400000)"},
    {"topic_idle_shorter_than_a_use_stamp", "refresher:\n  topic_idle_ms: 500\n", 2, 18,
     "must be 0 (topics stay) or at least 1000, got 500"},
    {"base_plus_max_node_id_overflows", "broker_ports:\n  base: 65500\n  max_node_id: 100\n", 2, 9,
     "base 65500 + max_node_id 100 passes the highest port 65535"},
    {"max_listeners_zero", "broker_ports:\n  max_listeners: 0\n", 2, 18,
     "broker_ports.max_listeners: 0 is out of range (1..65535)"},
    {"bind_retry_too_short", "broker_ports:\n  bind_retry_max_ms: 10\n", 2, 22,
     "broker_ports.bind_retry_max_ms: 10 is out of range (250..600000)"},
    {"admin_one_connection", "admin:\n  max_connections: 1\n", 2, 20,
     "admin.max_connections: 1 is out of range (2..4096)"},
    {"bootstrap_port_zero", "bootstrap_servers: [kafka:0]\n", 1, 21,
     "bootstrap_servers[0]: port 0 is not a broker port"},
    // Bad host:port.
    {"host_without_port", "listen: localhost\n", 1, 9,
     "listen: bad host:port 'localhost': expected host:port"},
    {"port_not_a_number", "listen: localhost:http\n", 1, 9, "'http' is not a port number"},
    {"port_out_of_range", "admin:\n  listen: 127.0.0.1:99999\n", 2, 11,
     "port 99999 is out of range"},
    {"bad_host_chars", "bootstrap_servers: ['bad host:9092']\n", 1, 21,
     "'bad host' is not a valid host"},
    {"ipv6_without_brackets", "listen: ::1:9092\n", 1, 9, "IPv6 addresses need brackets"},
    {"ipv6_unclosed", "listen: '[::1:9092'\n", 1, 9, "missing ']'"},
    {"bad_advertise_host", "advertise_host: 'not valid!'\n", 1, 17,
     "advertise_host: 'not valid!' is not a valid host name or address"},
    // Bad mode and other choices.
    {"bad_default_mode", "policy:\n  default_mode: enforcing\n", 2, 17,
     "'enforcing' is not one of enforce, observe, off (did you mean 'enforce'?)"},
    {"bad_rule_mode", "policy:\n  rules:\n    - topics: x\n      mode: strict\n", 4, 13,
     "policy.rules[0].mode: 'strict' is not one of enforce, observe, off"},
    {"rule_without_mode", "policy:\n  rules:\n    - topics: x\n", 3, 7,
     "policy.rules[0]: missing 'mode'"},
    {"unknown_rule_api", "policy:\n  rules:\n    - apis: [fetc]\n      mode: observe\n", 3, 14,
     "unknown API 'fetc' (did you mean 'fetch'?)"},
    {"bad_log_level", "logging:\n  level: verbose\n", 2, 10,
     "'verbose' is not one of trace, debug, info, warn, error, critical, off"},
    {"bad_log_format", "logging:\n  format: jsonl\n", 2, 11, "(did you mean 'json'?)"},
    {"bad_map_node_id", "broker_ports:\n  map:\n    x1: 9000\n", 3, 5,
     "broker_ports.map: node id 'x1' is not a non-negative 32-bit integer"},
    // Port clashes.
    {"admin_clashes_with_listener", "listen: 127.0.0.1:9092\nadmin:\n  listen: 127.0.0.1:9092\n", 3,
     11, "admin.listen: port clash: 9092 is also the bootstrap listener (listen at test.yaml:1)"},
    {"wildcard_clashes_with_loopback",
     "listen: 0.0.0.0:9100\nadvertise_host: gw.example\nadmin:\n  listen: 127.0.0.1:9100\n", 4, 11,
     "port clash: 9100 is also the bootstrap listener"},
    // Settings that would run without doing what they say.
    {"wildcard_listen_without_advertise_host", "listen: 0.0.0.0:9092\n", 1, 9,
     "listen: 0.0.0.0 is a wildcard address and advertise_host is not set"},
    {"wildcard_ipv6_listen_without_advertise_host", "listen: '[::]:9092'\n", 1, 9,
     "listen: :: is a wildcard address"},
    {"wildcard_advertise_host", "listen: 0.0.0.0:9092\nadvertise_host: 0.0.0.0\n", 2, 17,
     "advertise_host: '0.0.0.0' is a wildcard address, not one clients can connect to"},
    {"upstream_tls_files_without_enabled", "upstream_tls:\n  ca_file: /etc/ca.crt\n", 2, 12,
     "upstream_tls.ca_file: is set but upstream_tls.enabled is not true"},
    {"upstream_tls_cert_without_enabled",
     "upstream_tls:\n  cert_file: /c.crt\n  key_file: /c.key\n", 2, 14,
     "upstream_tls.cert_file: is set but upstream_tls.enabled is not true"},
    {"reroute_on_a_rule_that_is_off",
     "policy:\n  rules:\n    - topics: a\n      mode: \"off\"\n      reroute: true\n", 5, 16,
     "policy.rules[0].reroute: reroute: true on a rule whose mode is off"},
    {"base_range_covers_listener", "listen: 127.0.0.1:9092\nbroker_ports:\n  base: 9090\n", 1, 9,
     "listen: port clash: 9092 is node 2's broker port under broker_ports.base 9090"},
    {"map_entries_collide", "broker_ports:\n  map:\n    1: 9500\n    2: 9500\n", 4, 8,
     "broker_ports.map.2: port clash: 9500 is also node 1's broker port"},
    {"map_entry_in_base_range", "broker_ports:\n  base: 19092\n  map:\n    1001: 19093\n", 4, 11,
     "broker_ports.map.1001: port clash: 19093 is node 1's broker port under broker_ports.base"},
    {"admin_in_base_range", "broker_ports:\n  base: 9600\n", 1, 1,
     "admin.listen: port clash: 9644 is node 44's broker port"},
    // TLS.
    {"tls_cert_without_key", "tls:\n  cert_file: /c.crt\n", 2, 3,
     "tls.key_file: tls.cert_file needs a key_file"},
    {"tls_client_auth_without_ca", "tls:\n  cert_file: /c\n  key_file: /k\n  client_auth: required\n",
     4, 16, "tls.client_auth: required needs tls.client_ca_file"},
    {"tls_client_auth_unknown", "tls:\n  client_auth: optional\n", 2, 16,
     "'optional' is not one of"},
    {"tls_key_without_cert", "tls:\n  key_file: /k\n", 2, 13,
     "tls.key_file: needs tls.cert_file"},
    {"tls_sni_pattern_without_id",
     "tls:\n  cert_file: /c\n  key_file: /k\n  sni:\n    broker_host_pattern: b.kafka.example.com\n",
     5, 26, "must contain $(nodeId) once"},
    {"tls_unknown_sni_key", "tls:\n  sni:\n    pattern: x\n", 3, 5,
     "unknown key 'pattern' in tls.sni"},
    {"tls_handshake_timeout_range", "tls:\n  cert_file: /c\n  key_file: /k\n  handshake_timeout_ms: 10\n",
     4, 25, "tls.handshake_timeout_ms: 10 is out of range"},
    {"tls_cipher_list_selects_nothing",
     "tls:\n  cert_file: /c\n  key_file: /k\n  cipher_list: NO-SUCH-CIPHER\n", 4, 16,
     "tls.cipher_list: OpenSSL selects no TLS 1.2 cipher suite"},
    {"tls_cipher_suites_unknown_name",
     "tls:\n  cert_file: /c\n  key_file: /k\n  cipher_suites: TLS_AES_128_GCM_SHA256:TLS_NOPE\n",
     4, 18, "tls.cipher_suites: \"TLS_NOPE\" is not a TLS 1.3 cipher suite"},
    {"tls_min_version_unknown", "tls:\n  min_version: TLSv1.1\n", 2, 16,
     "'TLSv1.1' is not one of"},
    {"upstream_tls_cipher_list_selects_nothing",
     "upstream_tls:\n  enabled: true\n  cipher_list: \"!ALL\"\n", 3, 16,
     "upstream_tls.cipher_list: OpenSSL selects no TLS 1.2 cipher suite"},
    {"sidecar_credentials_on_a_remote_listener",
     "listen: 0.0.0.0:9092\nadvertise_host: gw.example\nupstream_sasl:\n  mechanism: PLAIN\n  username: u\n  password_env: P\n"
     "  on_behalf_of_clients: true\n",
     7, 25, "lends epochgate's SASL principal to every client that can reach '0.0.0.0'"},
    {"sidecar_credentials_on_remote_broker_ports",
     "broker_ports:\n  bind_host: 10.0.0.5\nupstream_sasl:\n  mechanism: PLAIN\n  username: u\n"
     "  password_env: P\n  on_behalf_of_clients: true\n",
     7, 25, "every client that can reach '10.0.0.5'"},
    {"upstream_tls_cert_without_key", "upstream_tls:\n  enabled: true\n  cert_file: /c\n", 2, 3,
     "upstream_tls.key_file: upstream_tls.cert_file and key_file go together"},
};

class BadConfigTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfigTest, ReportsOneProblemAtTheRightPlace) {
  const BadCase& c = GetParam();
  const LoadResult r = load_config_string(c.yaml, "test.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << [&] {
    std::string all;
    for (const auto& p : r.problems) all += p.to_string() + "\n";
    return all;
  }();
  const Problem& p = r.problems[0];
  EXPECT_EQ(p.file, "test.yaml");
  EXPECT_EQ(p.line, c.line) << p.to_string();
  EXPECT_EQ(p.column, c.column) << p.to_string();
  EXPECT_NE(p.reason.find(c.reason), std::string::npos) << p.to_string();
  EXPECT_EQ(p.to_string(), "test.yaml:" + std::to_string(c.line) + ":" + std::to_string(c.column) +
                               ": " + p.reason);
}

INSTANTIATE_TEST_SUITE_P(EveryErrorKind, BadConfigTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(LoaderTest, SidecarCredentialsNeedLoopbackCertificatesOrConsent) {
  const std::string sasl =
      "upstream_sasl:\n  mechanism: PLAIN\n  username: u\n  password_env: P\n"
      "  on_behalf_of_clients: true\n";
  for (const std::string& accepted :
       {"listen: 127.0.0.1:9092\n" + sasl,
        "listen: '[::1]:9092'\n" + sasl,
        "listen: 0.0.0.0:9092\nadvertise_host: gw.example\n" + sasl + "  allow_remote_clients: true\n",
        "listen: 0.0.0.0:9092\nadvertise_host: gw.example\ntls:\n  cert_file: /c\n  key_file: /k\n  client_ca_file: /ca\n"
        "  client_auth: required\n" + sasl}) {
    const LoadResult r = load_config_string(accepted, "test.yaml");
    EXPECT_TRUE(r.problems.empty()) << accepted << (r.problems.empty() ? "" : r.problems[0].to_string());
  }
  const LoadResult r = load_config_string(
      "listen: 0.0.0.0:9092\nadvertise_host: gw.example\ntls:\n  cert_file: /c\n  key_file: /k\n  client_ca_file: /ca\n"
      "  client_auth: requested\n" + sasl, "test.yaml");
  EXPECT_EQ(r.problems.size(), 1u) << "client_auth: requested lets a client in without a certificate";
}

TEST(LoaderTest, SeveralProblemsAreAllReportedInFileOrder) {
  // Structural problems (lines 1, 4, 5) and a range problem found by
  // validation (line 2) come out sorted by position.
  const LoadResult r = load_config_string(
      "listn: a:1\nworkers: 999\nlogging:\n  level: loud\n  formt: json\n", "multi.yaml");
  ASSERT_EQ(r.problems.size(), 4u);
  EXPECT_EQ(r.problems[0].line, 1);
  EXPECT_EQ(r.problems[1].line, 2);
  EXPECT_EQ(r.problems[2].line, 4);
  EXPECT_EQ(r.problems[3].line, 5);
}

TEST(LoaderTest, WrongTypeDoesNotCascadeIntoRelationChecks) {
  // low watermark unreadable: no second complaint about low >= high.
  const LoadResult r = load_config_string(
      "limits:\n  high_watermark_bytes: 1024\n  low_watermark_bytes: lots\n", "t.yaml");
  ASSERT_EQ(r.problems.size(), 1u) << r.problems[1].to_string();
  EXPECT_NE(r.problems[0].reason.find("expected a size"), std::string::npos);
}

TEST(LoaderTest, FullConfigIsReadWithUnits) {
  const LoadResult r = load_config_string(R"(
listen: 0.0.0.0:9092
advertise_host: epochgate.kafka.svc
bootstrap_servers: "kafka-0:9092, kafka-1:9093,[::1]:9094"
broker_ports:
  bind_host: 0.0.0.0
  base: 19092
  map: {1001: 29000}
  max_node_id: 10
  max_listeners: 64
  absent_grace_ms: 2m
  bind_retry_max_ms: 10s
workers: 4
drain_timeout_ms: 45s
admin:
  enabled: false
  listen: 0.0.0.0:9092
  max_connections: 16
  idle_timeout_ms: 3s
  expose_debug: yes
limits:
  max_frame_bytes: 50MiB
  high_watermark_bytes: 8MiB
  low_watermark_bytes: 2MiB
  buffer_budget_bytes: 2GiB
  idle_timeout_ms: 10m
policy:
  default_mode: observe
  rules:
    - topics: "orders-*"
      apis: [produce, fetch]
      mode: enforce
    - topics: "logs"
      apis: share
      mode: "off"
  inject_epochs: no
refresher:
  interval_ms: 1h
logging:
  level: debug
  format: json
  rate_limit_per_sec: 0
)",
                                          "full.yaml");
  ASSERT_TRUE(r.ok()) << r.problems[0].to_string();
  const Config& c = r.config;
  EXPECT_EQ(c.listen, (HostPort{"0.0.0.0", 9092}));
  EXPECT_EQ(c.effective_advertise_host(), "epochgate.kafka.svc");
  ASSERT_EQ(c.bootstrap_servers.size(), 3u);
  EXPECT_EQ(c.bootstrap_servers[1], (HostPort{"kafka-1", 9093}));
  EXPECT_EQ(c.bootstrap_servers[2], (HostPort{"::1", 9094}));
  EXPECT_EQ(c.bootstrap_servers[2].to_string(), "[::1]:9094");
  EXPECT_EQ(c.broker_ports.base, 19092);
  EXPECT_EQ(c.broker_ports.map.at(1001), 29000);
  EXPECT_EQ(c.broker_ports.max_node_id, 10);
  EXPECT_EQ(c.broker_ports.max_listeners, 64u);
  EXPECT_EQ(c.broker_ports.absent_grace_ms, 120000u);
  EXPECT_EQ(c.broker_ports.bind_retry_max_ms, 10000u);
  EXPECT_EQ(c.admin.max_connections, 16u);
  EXPECT_EQ(c.admin.idle_timeout_ms, 3000u);
  EXPECT_TRUE(c.admin.expose_debug);
  EXPECT_EQ(c.workers, 4u);
  EXPECT_EQ(c.drain_timeout_ms, 45000u);
  EXPECT_FALSE(c.admin.enabled);  // disabled admin cannot clash with the listener
  EXPECT_EQ(c.limits.max_frame_bytes, 50u << 20);
  EXPECT_EQ(c.limits.buffer_budget_bytes, 2ull << 30);
  EXPECT_EQ(c.limits.idle_timeout_ms, 600000u);
  EXPECT_EQ(c.policy.default_mode, Mode::kObserve);
  ASSERT_EQ(c.policy.rules.size(), 2u);
  EXPECT_EQ(c.policy.rules[0].apis, (std::vector<std::string>{"produce", "fetch"}));
  EXPECT_EQ(c.policy.rules[1].apis, (std::vector<std::string>{"share"}));
  EXPECT_EQ(c.policy.rules[1].mode, Mode::kOff);
  EXPECT_FALSE(c.policy.inject_epochs);
  EXPECT_EQ(c.refresher.interval_ms, 3600000u);
  EXPECT_EQ(c.logging.format, "json");
  EXPECT_EQ(c.logging.rate_limit_per_sec, 0u);
  EXPECT_EQ(c.source_file, "full.yaml");
}

TEST(LoaderTest, TlsSectionsAreRead) {
  const LoadResult r = load_config_string(
      "tls:\n  cert_file: /etc/t/tls.crt\n  key_file: /etc/t/tls.key\n"
      "  key_password_file: /etc/t/pw\n  client_ca_file: /etc/t/ca.crt\n"
      "  client_auth: requested\n  handshake_timeout_ms: 2s\n  plaintext_clients: loopback\n"
      "  sni:\n    broker_host_pattern: b-$(nodeId).kafka.example.com\n"
      "    bootstrap_host: bootstrap.kafka.example.com\n"
      "upstream_tls:\n  enabled: true\n  ca_file: /etc/u/ca.crt\n  cert_file: /etc/u/c.crt\n"
      "  key_file: /etc/u/c.key\n  verify_hostname: false\n",
      "tls.yaml");
  ASSERT_TRUE(r.problems.empty()) << r.problems.front().to_string();
  const Config& c = r.config;
  EXPECT_TRUE(c.tls.enabled());
  EXPECT_EQ(c.tls.key_password_file, "/etc/t/pw");
  EXPECT_EQ(c.tls.client_auth, "requested");
  EXPECT_EQ(c.tls.handshake_timeout_ms, 2000u);
  EXPECT_EQ(c.tls.plaintext_clients, "loopback");
  EXPECT_EQ(c.tls.sni.broker_host_pattern, "b-$(nodeId).kafka.example.com");
  EXPECT_EQ(c.tls.sni.bootstrap_host, "bootstrap.kafka.example.com");
  EXPECT_TRUE(c.upstream_tls.enabled);
  EXPECT_EQ(c.upstream_tls.ca_file, "/etc/u/ca.crt");
  EXPECT_FALSE(c.upstream_tls.verify_hostname);
  const Config d;
  EXPECT_FALSE(d.tls.enabled());
  EXPECT_FALSE(d.upstream_tls.enabled);
  EXPECT_TRUE(d.upstream_tls.verify_hostname);
}

TEST(LoaderTest, EmptyDocumentGivesDefaults) {
  const LoadResult r = load_config_string("# nothing here\n", "empty.yaml");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.config.listen, (HostPort{"127.0.0.1", 9092}));
  EXPECT_EQ(r.config.admin.listen, (HostPort{"127.0.0.1", 9644}));  // loopback by default
  EXPECT_TRUE(r.config.admin.enabled);
}

TEST(LoaderTest, BootstrapIsRequiredOnlyWhenAskedFor) {
  const LoadResult r = load_config_string("workers: 1\n", "t.yaml");
  EXPECT_TRUE(r.ok());
  ValidateOptions o;
  o.require_bootstrap = true;
  const auto problems = validate_config(r.config, r.origins, o);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].reason.find("at least one upstream broker is required"), std::string::npos);
}

TEST(LoaderTest, DifferentHostsDoNotClash) {
  const LoadResult r =
      load_config_string("listen: 127.0.0.1:9092\nadmin:\n  listen: 10.0.0.1:9092\n", "t.yaml");
  EXPECT_TRUE(r.ok()) << r.problems[0].to_string();
}

TEST(LoaderTest, MappedNodeLeavesItsBasePortFree) {
  // Node 2 has a map entry, so base + 2 (9092) is not a broker port.
  const LoadResult r = load_config_string(
      "listen: 127.0.0.1:9092\nbroker_ports:\n  base: 9090\n  map: {2: 9400}\n", "t.yaml");
  EXPECT_TRUE(r.ok()) << r.problems[0].to_string();
}

TEST(LoaderTest, UnreadableFileIsOneProblem) {
  const LoadResult r = load_config_file("/nonexistent/epochgate.yaml");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].to_string(), "/nonexistent/epochgate.yaml: cannot read the file");
}

TEST(LoaderTest, DirectoryIsNotAConfigFile) {
  // An ifstream opens a directory and reads nothing; that must not pass as
  // an empty (all defaults) configuration.
  const LoadResult r = load_config_file("/tmp");
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].to_string(), "/tmp: is a directory, not a configuration file");
}

TEST(LoaderTest, FileProblemsNameTheFile) {
  const std::string path = ::testing::TempDir() + "/loader_file_test.yaml";
  {
    std::ofstream out(path);
    out << "workers: 2\nlimts: {}\n";
  }
  const LoadResult r = load_config_file(path);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].to_string(),
            path + ":2:1: unknown key 'limts' at the top level (did you mean 'limits'?)");
  EXPECT_EQ(r.config.source_file, path);
  std::remove(path.c_str());
}

TEST(LoaderTest, SchemaKeysCoverEveryConfigSection) {
  const auto& keys = config_schema_keys();
  for (const char* section : {"", "broker_ports", "admin", "limits", "policy", "policy.rules[]",
                              "refresher", "upstream_sasl", "logging"}) {
    EXPECT_TRUE(keys.count(section)) << section;
  }
  EXPECT_EQ(keys.at("limits").size(), 15u);
}

}  // namespace
}  // namespace epochgate::config
