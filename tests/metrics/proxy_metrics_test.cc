// tests/metrics/proxy_metrics_test.cc: ProxyMetrics families follow the
// Prometheus naming rules (prefix, base units, _total), label sets stay
// bounded whatever the input, and counting is exact under concurrency.
#include "metrics/proxy_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "metrics/api_labels.h"
#include "metrics/close_reason.h"

namespace epochgate::metrics {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

class ProxyMetricsTest : public ::testing::Test {
 protected:
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  ProxyMetrics metrics_{registry_};

  // As a scrape does: the latency histograms are folded first.
  std::vector<MetricFamily> collect() {
    metrics_.fold();
    return registry_->Collect();
  }

  const MetricFamily* family(const std::vector<MetricFamily>& all, const std::string& name) {
    for (const auto& f : all) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }

  // Values of `label` across the children of family `name`.
  std::set<std::string> label_values(const std::string& name, const std::string& label) {
    std::set<std::string> out;
    const auto all = collect();
    const MetricFamily* f = family(all, name);
    if (f == nullptr) return out;
    for (const auto& m : f->metric) {
      for (const auto& l : m.label) {
        if (l.name == label) out.insert(l.value);
      }
    }
    return out;
  }

  // Value of the child of `name` whose labels include all of `labels`; -1 if none.
  double value(const std::string& name,
               const std::vector<std::pair<std::string, std::string>>& labels) {
    const auto all = collect();
    const MetricFamily* f = family(all, name);
    if (f == nullptr) return -1;
    for (const auto& m : f->metric) {
      bool match = true;
      for (const auto& [k, v] : labels) {
        bool found = false;
        for (const auto& l : m.label) found = found || (l.name == k && l.value == v);
        match = match && found;
      }
      if (!match) continue;
      switch (f->type) {
        case MetricType::Counter:
          return m.counter.value;
        case MetricType::Gauge:
          return m.gauge.value;
        case MetricType::Histogram:
          return static_cast<double>(m.histogram.sample_count);
        default:
          return -1;
      }
    }
    return -1;
  }
};

TEST_F(ProxyMetricsTest, FamiliesEveryDeploymentHasExistBeforeFirstUse) {
  // prometheus-cpp omits families without children; these have theirs up front.
  const auto all = collect();
  for (const char* name : {"epochgate_requests_total",
                           "epochgate_responses_total",
                           "epochgate_bytes_total",
                           "epochgate_connections_active",
                           "epochgate_connections_total",
                           "epochgate_upstream_connect_failures_total",
                           "epochgate_upstream_unanswered_total",
                           "epochgate_upstream_latency_seconds",
                           "epochgate_proxy_latency_seconds",
                           "epochgate_unexpected_responses_total",
                           "epochgate_backpressure_pauses_total",
                           "epochgate_api_versions_capped_total",
                           "epochgate_addresses_rewritten_total",
                           "epochgate_config_reloads_total",
                           "epochgate_config_last_reload_successful",
                           "epochgate_start_time_seconds",
                           "epochgate_hints_total",
                           "epochgate_epochs_injected_total",
                           "epochgate_metadata_refreshes_total",
                           "epochgate_view_partitions",
                           "epochgate_view_topics_forgotten_total",
                           "epochgate_view_epoch_disputes_total",
                           "epochgate_view_epoch_rollbacks_total",
                           "epochgate_version_downgrades_total",
                           "epochgate_ready"}) {
    EXPECT_NE(family(all, name), nullptr) << name;
  }
  EXPECT_EQ(value("epochgate_requests_total", {{"api", "produce"}}), 0);
  EXPECT_EQ(value("epochgate_hints_total", {{"source", "backfilled"}}), 0);
}

TEST_F(ProxyMetricsTest, EveryFamilyFollowsPrometheusNaming) {
  // Touch every method so families created on first use are present too.
  metrics_.frame_error("truncated");
  metrics_.connection_closed_reason("idle_timeout");
  metrics_.fenced_partition(0, "not_leader", "enforce");
  metrics_.set_build_info("test", 1);
  const auto all = collect();
  ASSERT_GE(all.size(), 26u);
  for (const auto& f : all) {
    EXPECT_EQ(f.name.rfind("epochgate_", 0), 0u) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    const bool total = f.name.size() > 6 && f.name.substr(f.name.size() - 6) == "_total";
    if (f.type == MetricType::Counter) {
      EXPECT_TRUE(total) << f.name << " is a counter without _total";
    } else {
      EXPECT_FALSE(total) << f.name << " is not a counter but ends in _total";
    }
    if (f.type == MetricType::Histogram) {
      EXPECT_NE(f.name.find("_seconds"), std::string::npos) << f.name << ": base unit seconds";
    }
    EXPECT_EQ(f.name.find("_ms"), std::string::npos) << f.name << ": use base units";
    EXPECT_EQ(f.name.find("_milliseconds"), std::string::npos) << f.name;
  }
  for (const char* name : {"epochgate_requests_total",
                           "epochgate_responses_total",
                           "epochgate_bytes_total",
                           "epochgate_connections_active",
                           "epochgate_connections_total",
                           "epochgate_upstream_connect_failures_total",
                           "epochgate_upstream_latency_seconds",
                           "epochgate_proxy_latency_seconds",
                           "epochgate_frame_errors_total",
                           "epochgate_unexpected_responses_total",
                           "epochgate_backpressure_pauses_total",
                           "epochgate_connections_closed_total",
                           "epochgate_api_versions_capped_total",
                           "epochgate_addresses_rewritten_total",
                           "epochgate_config_reloads_total",
                           "epochgate_config_last_reload_successful",
                           "epochgate_config_last_reload_success_timestamp_seconds",
                           "epochgate_build_info",
                           "epochgate_start_time_seconds",
                           "epochgate_fenced_partitions_total",
                           "epochgate_hints_total",
                           "epochgate_epochs_injected_total",
                           "epochgate_metadata_refreshes_total",
                           "epochgate_view_partitions",
                           "epochgate_view_topics_forgotten_total",
                           "epochgate_view_epoch_disputes_total",
                           "epochgate_view_epoch_rollbacks_total",
                           "epochgate_version_downgrades_total",
                           "epochgate_ready"}) {
    EXPECT_NE(family(all, name), nullptr) << name;
  }
}

TEST_F(ProxyMetricsTest, RefresherFailuresByReasonAndTheViewsAge) {
  metrics_.metadata_refresh_failed("sasl_login");
  metrics_.metadata_refresh_failed("sasl_login");
  metrics_.metadata_refresh_failed("unreachable");
  metrics_.metadata_refreshed(1764806400.5);
  metrics_.set_view_age(42.25);
  EXPECT_EQ(value("epochgate_metadata_refresh_errors_total", {{"reason", "sasl_login"}}), 2);
  EXPECT_EQ(value("epochgate_metadata_refresh_errors_total", {{"reason", "unreachable"}}), 1);
  EXPECT_EQ(value("epochgate_metadata_last_success_timestamp_seconds", {}), 1764806400.5);
  EXPECT_EQ(value("epochgate_metadata_view_age_seconds", {}), 42.25);
}

TEST_F(ProxyMetricsTest, UnansweredUpstreamsByNodeAndOverdueRequestsByApi) {
  EXPECT_EQ(value("epochgate_upstream_unanswered_total", {{"node", "bootstrap"}}), 0);
  metrics_.upstream_unanswered(-1);
  metrics_.upstream_unanswered(2);
  metrics_.upstream_unanswered(2);
  metrics_.upstream_overdue(1);
  EXPECT_EQ(value("epochgate_upstream_unanswered_total", {{"node", "bootstrap"}}), 1);
  EXPECT_EQ(value("epochgate_upstream_unanswered_total", {{"node", "2"}}), 2);
  EXPECT_EQ(value("epochgate_upstream_overdue_requests_total", {{"api", "fetch"}}), 1);
}

TEST_F(ProxyMetricsTest, RequestsAndResponsesCountByApiName) {
  metrics_.request(0);
  metrics_.request(0);
  metrics_.request(3);
  metrics_.response(0);
  EXPECT_EQ(value("epochgate_requests_total", {{"api", "produce"}}), 2);
  EXPECT_EQ(value("epochgate_requests_total", {{"api", "metadata"}}), 1);
  EXPECT_EQ(value("epochgate_responses_total", {{"api", "produce"}}), 1);
}

TEST_F(ProxyMetricsTest, ApiKeysOutsideTheTableShareUnknown) {
  for (int16_t k : {int16_t{-1}, int16_t{95}, int16_t{1000}, int16_t{32767}}) metrics_.request(k);
  EXPECT_EQ(value("epochgate_requests_total", {{"api", "unknown"}}), 4);
  const auto apis = label_values("epochgate_requests_total", "api");
  EXPECT_TRUE(apis.count("unknown"));
  for (const char* raw : {"-1", "95", "1000", "32767"}) EXPECT_FALSE(apis.count(raw)) << raw;
}

TEST_F(ProxyMetricsTest, ApiLabelsAreKafkaNamesInSnakeCase) {
  EXPECT_STREQ(api_label(0), "produce");
  EXPECT_STREQ(api_label(23), "offset_for_leader_epoch");
  EXPECT_STREQ(api_label(78), "share_fetch");
  EXPECT_STREQ(api_label(94), "unregister_controller");
  EXPECT_STREQ(api_label(95), "unknown");
  std::set<std::string> names;
  for (int16_t k = 0; k < kApiLabelCount; ++k) names.insert(api_label(k));
  EXPECT_EQ(names.size(), static_cast<size_t>(kApiLabelCount)) << "label values must be unique";
}

TEST_F(ProxyMetricsTest, NodeLabelIsCappedThenOther) {
  for (int32_t node = 0; node < 200; ++node) metrics_.connection_opened(Side::kUpstream, node);
  metrics_.connection_opened(Side::kClient, -1);
  const auto nodes = label_values("epochgate_connections_total", "node");
  // 64 distinct ids, "other", and "bootstrap".
  EXPECT_EQ(nodes.size(), 66u);
  EXPECT_TRUE(nodes.count("other"));
  EXPECT_TRUE(nodes.count("bootstrap"));
  EXPECT_TRUE(nodes.count("0"));
  EXPECT_FALSE(nodes.count("199"));
  EXPECT_EQ(value("epochgate_connections_total", {{"side", "upstream"}, {"node", "other"}}), 136);
  EXPECT_EQ(value("epochgate_connections_active", {{"side", "client"}, {"node", "bootstrap"}}), 1);
}

TEST_F(ProxyMetricsTest, ActiveConnectionsGoBackToZero) {
  metrics_.connection_opened(Side::kClient, 2);
  metrics_.connection_opened(Side::kClient, 2);
  metrics_.connection_closed(Side::kClient, 2);
  metrics_.connection_closed(Side::kClient, 2);
  EXPECT_EQ(value("epochgate_connections_active", {{"side", "client"}, {"node", "2"}}), 0);
  EXPECT_EQ(value("epochgate_connections_total", {{"side", "client"}, {"node", "2"}}), 2);
}

TEST_F(ProxyMetricsTest, HeldResourcesAddUpAcrossWorkersAndReturnToZero) {
  for (const char* name : {"epochgate_sessions_live", "epochgate_in_flight_requests",
                           "epochgate_upstream_connections_live",
                           "epochgate_buffer_pool_buffers", "epochgate_buffer_pool_bytes"})
    EXPECT_EQ(value(name, {}), 0) << name << " exists at 0 before the first client";
  // Two workers publish what they hold, each as its change since the last time.
  HeldResources one{3, 2, 3, 4, 4 << 16}, two{1, 0, 1, 1, 1 << 16};
  metrics_.add_held_resources(one);
  metrics_.add_held_resources(two);
  EXPECT_EQ(value("epochgate_sessions_live", {}), 4);
  EXPECT_EQ(value("epochgate_in_flight_requests", {}), 2);
  EXPECT_EQ(value("epochgate_upstream_connections_live", {}), 4);
  EXPECT_EQ(value("epochgate_buffer_pool_buffers", {}), 5);
  EXPECT_EQ(value("epochgate_buffer_pool_bytes", {}), 5 << 16);
  // Their clients left: each publishes the negative of what it held.
  metrics_.add_held_resources({-3, -2, -3, -4, -(4 << 16)});
  metrics_.add_held_resources({-1, 0, -1, -1, -(1 << 16)});
  for (const char* name : {"epochgate_sessions_live", "epochgate_in_flight_requests",
                           "epochgate_upstream_connections_live",
                           "epochgate_buffer_pool_buffers", "epochgate_buffer_pool_bytes"})
    EXPECT_EQ(value(name, {}), 0) << name;
}

TEST_F(ProxyMetricsTest, ReasonLabelsAreCapped) {
  int seeded = 0;  // the close reasons whose frame-error series exist from the start
  for (std::size_t i = 0; i < kCloseReasonCount; ++i)
    seeded += frame_error_seeded(static_cast<CloseReason>(i)) ? 1 : 0;
  for (int i = 0; i < 100; ++i) metrics_.frame_error("reason_" + std::to_string(i));
  const auto reasons = label_values("epochgate_frame_errors_total", "reason");
  // 32 distinct (the seeded ones, then the first of these) + "other"
  EXPECT_EQ(reasons.size(), 33u);
  EXPECT_EQ(value("epochgate_frame_errors_total", {{"reason", "other"}}), 100 - (32 - seeded));
  for (int i = 0; i < 40; ++i) metrics_.hint("s" + std::to_string(i));
  EXPECT_EQ(label_values("epochgate_hints_total", "source").size(), 9u);
}

TEST_F(ProxyMetricsTest, AlertedSeriesExistAtZeroBeforeTheFirstEvent) {
  EXPECT_EQ(value("epochgate_frame_errors_total", {{"reason", "frame_too_large"}}), 0);
  EXPECT_EQ(value("epochgate_frame_errors_total", {{"reason", "partial_frame_timeout"}}), 0);
  EXPECT_EQ(value("epochgate_fenced_partitions_total",
                  {{"api", "produce"}, {"reason", "not_leader"}, {"mode", "enforce"}}),
            0);
  EXPECT_EQ(value("epochgate_fenced_partitions_total",
                  {{"api", "fetch"}, {"reason", "stale_epoch"}, {"mode", "enforce"}}),
            0);
}

TEST_F(ProxyMetricsTest, FencedPartitionsByApiReasonMode) {
  metrics_.fenced_partition(0, "not_leader", "enforce");
  metrics_.fenced_partition(0, "not_leader", "enforce");
  metrics_.fenced_partition(1, "fenced_epoch", "observe");
  metrics_.fenced_partition(1, "fenced_epoch", "bogus");
  EXPECT_EQ(value("epochgate_fenced_partitions_total",
                  {{"api", "produce"}, {"reason", "not_leader"}, {"mode", "enforce"}}),
            2);
  EXPECT_EQ(value("epochgate_fenced_partitions_total",
                  {{"api", "fetch"}, {"reason", "fenced_epoch"}, {"mode", "observe"}}),
            1);
  EXPECT_EQ(label_values("epochgate_fenced_partitions_total", "mode"),
            (std::set<std::string>{"enforce", "observe", "other"}));
}

TEST_F(ProxyMetricsTest, LatencyHistogramsHaveMicrosecondToSecondBuckets) {
  metrics_.upstream_latency(1, 0.000015);
  metrics_.upstream_latency(1, 2.0);
  metrics_.proxy_latency(0.00002);
  const auto all = collect();
  const MetricFamily* f = family(all, "epochgate_upstream_latency_seconds");
  ASSERT_NE(f, nullptr);
  const prometheus::ClientMetric* fetch = nullptr;
  for (const auto& m : f->metric) {
    if (!m.label.empty() && m.label[0].value == "fetch") fetch = &m;
  }
  ASSERT_NE(fetch, nullptr);
  const auto& buckets = fetch->histogram.bucket;
  ASSERT_GE(buckets.size(), 15u);
  EXPECT_LE(buckets.front().upper_bound, 0.00001);
  EXPECT_GE(buckets[buckets.size() - 2].upper_bound, 10.0);  // last is +Inf
  EXPECT_EQ(fetch->histogram.sample_count, 2u);
  EXPECT_EQ(buckets.front().cumulative_count, 0u);  // 15 µs is above the first bucket
  EXPECT_EQ(value("epochgate_proxy_latency_seconds", {}), 1);
}

TEST_F(ProxyMetricsTest, ConfigReloadSetsResultAndLastReloadGauges) {
  EXPECT_EQ(value("epochgate_config_last_reload_successful", {}), 1);
  metrics_.config_reload(false);
  EXPECT_EQ(value("epochgate_config_last_reload_successful", {}), 0);
  EXPECT_EQ(value("epochgate_config_reloads_total", {{"result", "failure"}}), 1);
  metrics_.config_reload(true);
  EXPECT_EQ(value("epochgate_config_last_reload_successful", {}), 1);
  EXPECT_GT(value("epochgate_config_last_reload_success_timestamp_seconds", {}), 1.6e9);
}

TEST_F(ProxyMetricsTest, BuildInfoKeepsOneChild) {
  metrics_.set_build_info("1.0", 10);
  metrics_.set_build_info("1.1", 20);
  EXPECT_EQ(label_values("epochgate_build_info", "version"), std::set<std::string>{"1.1"});
  EXPECT_EQ(value("epochgate_start_time_seconds", {}), 20);
}

TEST_F(ProxyMetricsTest, CountsAreExactUnderConcurrency) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([this, t] {
      for (int i = 0; i < 20000; ++i) {
        metrics_.request(static_cast<int16_t>(i % 3));
        metrics_.connection_opened(Side::kUpstream, (i + t) % 80);  // races on new node slots
        metrics_.frame_error(i % 2 ? "truncated" : "bad_varint");
        metrics_.bytes(Direction::kUpstreamToClient, 2);
      }
    });
  }
  for (auto& th : threads) th.join();
  double requests = 0;
  for (const char* api : {"produce", "fetch", "list_offsets"}) {
    requests += value("epochgate_requests_total", {{"api", api}});
  }
  EXPECT_EQ(requests, 80000);
  EXPECT_EQ(value("epochgate_bytes_total", {{"direction", "upstream_to_client"}}), 160000);
  EXPECT_EQ(value("epochgate_frame_errors_total", {{"reason", "truncated"}}), 40000);
  double opened = 0;
  for (const auto& n : label_values("epochgate_connections_total", "node")) {
    const double v = value("epochgate_connections_total", {{"side", "upstream"}, {"node", n}});
    if (v > 0) opened += v;
  }
  EXPECT_EQ(opened, 80000);
  EXPECT_EQ(label_values("epochgate_connections_total", "node").size(), 66u);
}

}  // namespace
}  // namespace epochgate::metrics
