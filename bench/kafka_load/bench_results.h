// bench/kafka_load: every figure one bench run collects, per configuration,
// in one place so the report renders from data (never from measurements of
// its own). Plain data; no I/O.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "latency_samples.h"
#include "leader_move.h"

namespace epochgate::bench {

/// The configurations, in report order: the four of the throughput target,
/// (e) the splice(2) relay (bench/splice_relay.c) that is the floor for a
/// proxy, and (f) the same relay copying through user space (--copy), the
/// floor for a proxy that reads the bytes it moves.
enum ConfigId {
  kDirect = 0,
  kHaproxy = 1,
  kEpochgateOff = 2,
  kEpochgateEnforce = 3,
  kSpliceRelay = 4,
  kCopyRelay = 5,
  kConfigCount
};
const char* config_label(int id);  // "a direct", ...
/// Renames configuration `id` in every table and log line from now on.
void relabel_config(int id, const std::string& label);
const char* config_key(int id);    // "direct", "haproxy", "eg_off", "eg_enforce", "splice"

/// Throughput runs of one workload for one configuration (one entry per round).
struct ThroughputFigures {
  std::vector<double> msgs_per_sec;  ///< per round
  std::vector<double> mib_per_sec;
  LatencySamples latency;            ///< all rounds merged, µs
  double proxy_cpu_seconds = 0;      ///< summed over rounds (proxy configs only)
  double payload_bytes = 0;          ///< delivered payload bytes, summed
  std::vector<std::string> errors;
  double median_msgs() const;
  double median_mib() const;
  double cpu_seconds_per_gb() const;  ///< -1 when unknown
};

/// Ping-pong round trips of one request kind for one configuration.
struct PingPongFigures {
  LatencySamples rtt;  ///< µs, rounds merged
  std::vector<double> round_p50, round_p99;  ///< µs, per round
  std::vector<std::string> errors;
};

/// Resident size at many idle connections.
struct IdleFigures {
  bool measured = false;
  int connections = 0;     ///< that completed ApiVersions
  long rss_before_kib = 0;
  long rss_at_kib = 0;
  long rss_after_close_kib = 0;
};

/// One soak sample.
struct SoakSample {
  double minute = 0;
  long rss_kib = 0;
  long long delivered = 0;
};

/// Google Benchmark results of one program (csv rows).
struct MicroRow {
  std::string name;
  double real_ns = 0;
  double items_per_second = 0;
  double bytes_per_second = 0;
  std::string label;
  std::map<std::string, double> counters;  ///< user counters (e.g. bytes_per_partition)
};

struct LeaderMoveFigures {
  std::string label;
  std::string client;  ///< client retry setting of this variant
  std::vector<MoveOutcome> moves;
  LatencySamples window_all;
  LatencySamples window_moved;
  long long failed = 0;
  std::vector<std::string> errors;
};

struct BenchResults {
  std::string command;
  std::string source_rev;  ///< git revision of the tree that was built
  std::string started_at;
  std::string load_before, load_after;
  std::vector<std::string> versions;
  int rounds = 0;
  double seconds = 0;
  double latency_rate = 0;
  double latency_seconds = 0;
  int ping_count = 0;

  std::map<std::string, ThroughputFigures> produce[kConfigCount];  // key: "acks=1", "acks=all"
  ThroughputFigures consume[kConfigCount];
  ThroughputFigures fixed_rate_produce[kConfigCount];
  LatencySamples fixed_rate_e2e[kConfigCount];
  PingPongFigures ping_api_versions[kConfigCount];
  PingPongFigures ping_metadata[kConfigCount];
  /// epochgate_proxy_latency_seconds over the ping-pong: (le seconds, cumulative count).
  std::vector<std::pair<double, double>> proxy_held[kConfigCount];
  IdleFigures idle[kConfigCount];             ///< measured first, on fresh processes
  IdleFigures idle_after_load[kConfigCount];  ///< measured again after all the load
  long idle_connections_target = 0;
  std::vector<LeaderMoveFigures> leader_moves;  // per variant: direct no hints, epochgate, direct hints
  std::vector<std::string> leader_metrics;  ///< epochgate's hint/fence/refresh counters after the moves
  std::vector<MicroRow> codec_micro, policy_micro;
  std::string micro_error;
  double soak_minutes = 0;
  std::vector<SoakSample> soak;
  std::string soak_error;
  std::string sweep_section;   ///< markdown from the record-size sweep (size_sweep.h), or ""
  std::string scale_sections;  ///< markdown from the scale scenarios (scale.h), or ""
  double scale_seconds = 0;
  double wall_seconds = 0;
  std::vector<std::string> notes;
};

/// Renders RESULTS.md (markdown) and the gnuplot data/script into `out_dir`.
/// Returns false when a file cannot be written.
bool write_report(BenchResults& r, const std::string& out_dir);

}  // namespace epochgate::bench
