// bench/kafka_load: renders BenchResults as RESULTS.md plus gnuplot data and
// script. Formats only; every figure comes from the measurements.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "bench_results.h"

namespace epochgate::bench {

namespace {
std::string g_labels[kConfigCount] = {"(a) direct",           "(b) HAProxy TCP",
                                      "(c) epochgate off",    "(d) epochgate enforce",
                                      "(e) splice relay",     "(f) copy relay"};
}  // namespace

const char* config_label(int id) {
  return id >= 0 && id < kConfigCount ? g_labels[id].c_str() : "?";
}

void relabel_config(int id, const std::string& label) {
  if (id >= 0 && id < kConfigCount) g_labels[id] = label;
}

const char* config_key(int id) {
  static const char* const kKeys[] = {"direct",     "haproxy", "eg_off",
                                      "eg_enforce", "splice",  "copy"};
  return id >= 0 && id < kConfigCount ? kKeys[id] : "?";
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string ratio(double num, double den) {
  if (num <= 0 || den <= 0) return "n/a";
  return fmt("%.3f", num / den);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

std::string mem_total() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  std::getline(in, line);
  std::istringstream words(line);
  std::string key;
  long kib = 0;
  words >> key >> kib;
  return fmt("%.1f GiB", kib / 1024.0 / 1024.0);
}

std::string errors_of(const std::vector<std::string>& errors) {
  if (errors.empty()) return "";
  std::string out = " (errors: ";
  for (size_t i = 0; i < errors.size() && i < 3; ++i) out += (i ? "; " : "") + errors[i];
  return out + ")";
}

// "met" / "missed by X" for figure >= required (or <= when `at_most`).
std::string verdict(double figure, double required, bool at_most, const char* unit_fmt) {
  if (std::isnan(figure)) return "not measured";
  const bool met = at_most ? figure <= required : figure >= required;
  if (met) return "**met**";
  const double by = std::fabs(figure - required);
  return "**missed** by " + fmt(unit_fmt, by) +
         (required != 0 ? fmt(" (%.1f%%)", 100.0 * by / std::fabs(required)) : "");
}

double find_micro(const std::vector<MicroRow>& rows, const std::string& name) {
  for (const auto& r : rows) {
    if (r.name == name) return r.items_per_second;
  }
  return -1;
}

std::string si(double v) {
  if (v >= 1e9) return fmt("%.2f G", v / 1e9);
  if (v >= 1e6) return fmt("%.2f M", v / 1e6);
  if (v >= 1e3) return fmt("%.1f k", v / 1e3);
  return fmt("%.0f ", v);
}

}  // namespace

double ThroughputFigures::median_msgs() const { return median(msgs_per_sec); }
double ThroughputFigures::median_mib() const { return median(mib_per_sec); }
double ThroughputFigures::cpu_seconds_per_gb() const {
  if (payload_bytes <= 0 || proxy_cpu_seconds <= 0) return -1;
  return proxy_cpu_seconds / (payload_bytes / 1e9);
}

bool write_report(BenchResults& r, const std::string& out_dir) {
  std::ostringstream md;
  utsname un{};
  uname(&un);
  md << "# epochgate benchmark results\n\n";
  md << "Produced by `" << (r.command.empty() ? "epochgate-bench" : r.command) << "` on "
     << r.started_at << " (" << fmt("%.0f", r.wall_seconds) << " s wall). Regenerate with the same "
     << "command; see `bench/README.md` for what each scenario does.\n\n";
  md << "## Machine\n\n";
  md << "- " << sysconf(_SC_NPROCESSORS_ONLN) << " cores (`nproc`), CPU: " << cpu_model()
     << ", memory " << mem_total() << "\n";
  md << "- kernel " << un.sysname << " " << un.release << " " << un.machine << "\n";
  md << "- load average at start `" << r.load_before << "`, at end `" << r.load_after
     << "`: the machine is shared with other work, so absolute figures are noisy; the "
        "configurations are alternated (rotated order each round) so that noise falls on all "
        "of them alike, and ratios are taken within this one run.\n";
  for (const auto& v : r.versions) md << "- " << v << "\n";
  if (!r.source_rev.empty()) md << "- source: " << r.source_rev << "\n";
  md << "- Upstream: librdkafka's mock cluster (3 brokers, topic `t` with 16 partitions, "
        "replication 3; one identical cluster per configuration) inside the bench process; load from librdkafka clients in the same "
        "process; HAProxy (`mode tcp`, one frontend per broker, default threads) and epochgate "
        "(default workers = cores, log level warn) as child processes.\n\n";

  // ---- targets ----
  auto& pd = r.produce;
  md << "## Targets (throughput and CPU per GB; the (d)/(e) rows are the zero-copy floor's)\n\n";
  md << "| Target | Figure | Required | Result |\n|---|---|---|---|\n";
  for (const char* acks : {"acks=1", "acks=all"}) {
    const double d = pd[kEpochgateEnforce][acks].median_msgs();
    const double b = pd[kHaproxy][acks].median_msgs();
    const double a = pd[kDirect][acks].median_msgs();
    if (d > 0 && b > 0)
      md << "| Produce throughput " << acks << ", (d)/(b) | " << fmt("%.3f", d / b)
         << " | >= 0.95 | " << verdict(d / b, 0.95, false, "%.3f") << " |\n";
    // The earlier ">= 0.90 of direct" target sits above what even the zero-copy
    // relay reaches on 2 shared cores, so the (d)/(e) rows replaced it; the
    // ratio stays here, with the floor's own, for comparison with old runs.
    const double e = pd[kSpliceRelay][acks].median_msgs();
    if (d > 0 && a > 0)
      md << "| Produce throughput " << acks << ", (d)/(a) | " << fmt("%.3f", d / a)
         << " | (none: the earlier 0.90 is above the splice relay's own (e)/(a) "
         << (e > 0 ? fmt("%.3f", e / a) : std::string("-")) << "; replaced by (d)/(e)) | - |\n";
  }
  for (int kind = 0; kind < 2; ++kind) {
    PingPongFigures* pp = kind == 0 ? r.ping_api_versions : r.ping_metadata;
    const char* name = kind == 0 ? "ApiVersions" : "Metadata (1 topic)";
    if (pp[kEpochgateEnforce].rtt.empty() || pp[kHaproxy].rtt.empty() || pp[kDirect].rtt.empty())
      continue;
    // "Added p99 at most HAProxy's + 20 µs" is p99(d) - p99(a) <= p99(b) - p99(a) + 20,
    // i.e. p99(d) <= p99(b) + 20: direct's own noise cancels out.
    const double base = pp[kDirect].rtt.percentile(99);
    const double d99 = pp[kEpochgateEnforce].rtt.percentile(99);
    const double b99 = pp[kHaproxy].rtt.percentile(99);
    md << "| p99 round trip, " << name << ": (d) at most (b) + 20 µs | (d) " << fmt("%.1f", d99)
       << " µs, (b) " << fmt("%.1f", b99) << " µs (added vs direct " << fmt("%.1f", base)
       << " µs: (d) " << fmt("%+.1f", d99 - base) << ", (b) " << fmt("%+.1f", b99 - base)
       << ") | <= " << fmt("%.1f", b99 + 20) << " µs | "
       << verdict(d99, b99 + 20, true, "%.1f µs") << " |\n";
  }
  {
    ThroughputFigures d, b;
    for (const char* acks : {"acks=1", "acks=all"}) {
      d.proxy_cpu_seconds += pd[kEpochgateEnforce][acks].proxy_cpu_seconds;
      d.payload_bytes += pd[kEpochgateEnforce][acks].payload_bytes;
      b.proxy_cpu_seconds += pd[kHaproxy][acks].proxy_cpu_seconds;
      b.payload_bytes += pd[kHaproxy][acks].payload_bytes;
    }
    const double dc = d.cpu_seconds_per_gb(), bc = b.cpu_seconds_per_gb();
    if (dc > 0 && bc > 0)
      md << "| CPU seconds per GB produced, (d)/(b) | " << fmt("%.3f", dc / bc) << " ("
         << fmt("%.2f", dc) << " vs " << fmt("%.2f", bc) << " s/GB) | <= 1.3 | "
         << verdict(dc / bc, 1.3, true, "%.3f") << " |\n";
    const double dcc = r.consume[kEpochgateEnforce].cpu_seconds_per_gb();
    const double bcc = r.consume[kHaproxy].cpu_seconds_per_gb();
    if (dcc > 0 && bcc > 0)
      md << "| CPU seconds per GB consumed, (d)/(b) | " << fmt("%.3f", dcc / bcc) << " ("
         << fmt("%.2f", dcc) << " vs " << fmt("%.2f", bcc) << " s/GB) | <= 1.3 | "
         << verdict(dcc / bcc, 1.3, true, "%.3f") << " |\n";
  }
  // Against the splice relay (e): throughput at least 0.95 of it, CPU per
  // GB at most 1.5 times its own, produce and consume, policy enforcing.
  {
    auto floor_rows = [&](const std::string& name, const ThroughputFigures& d,
                          const ThroughputFigures& e) {
      const double dt = d.median_msgs(), et = e.median_msgs();
      if (dt > 0 && et > 0)
        md << "| Throughput " << name << ", (d)/(e) splice relay | " << fmt("%.3f", dt / et)
           << " | >= 0.95 | " << verdict(dt / et, 0.95, false, "%.3f") << " |\n";
      const double dc = d.cpu_seconds_per_gb(), ec = e.cpu_seconds_per_gb();
      if (dc > 0 && ec > 0)
        md << "| CPU seconds per GB " << name << ", (d)/(e) splice relay | " << fmt("%.3f", dc / ec)
           << " (" << fmt("%.2f", dc) << " vs " << fmt("%.2f", ec) << " s/GB) | <= 1.5 | "
           << verdict(dc / ec, 1.5, true, "%.3f") << " |\n";
    };
    for (const char* acks : {"acks=1", "acks=all"})
      floor_rows(std::string("produce ") + acks, pd[kEpochgateEnforce][acks],
                 pd[kSpliceRelay][acks]);
    floor_rows("consume", r.consume[kEpochgateEnforce], r.consume[kSpliceRelay]);
  }
  for (int c : {kEpochgateEnforce, kEpochgateOff}) {
    for (int pass = 0; pass < 2; ++pass) {
      const IdleFigures& f = pass == 0 ? r.idle[c] : r.idle_after_load[c];
      if (!f.measured) continue;
      const double mib = f.rss_at_kib / 1024.0;
      md << "| RSS at " << f.connections << " idle connections, " << config_label(c) << ", "
         << (pass == 0 ? "fresh process" : "after the load runs") << " | " << fmt("%.1f MiB", mib)
         << " | < 64 MiB | " << verdict(mib, 64, true, "%.1f MiB") << " |\n";
    }
  }
  if (!r.soak.empty()) {
    // Growth: the second half's peak over the first half's peak.
    long first_peak = 0, second_peak = 0;
    for (const auto& s : r.soak) {
      long& peak = s.minute < r.soak_minutes / 2 ? first_peak : second_peak;
      peak = std::max(peak, s.rss_kib);
    }
    const double growth = (second_peak - first_peak) / 1024.0;
    md << "| RSS growth over a " << fmt("%.0f", r.soak_minutes)
       << "-minute steady run (peak of 2nd half - peak of 1st half) | "
       << fmt("%+.2f MiB", growth) << " | <= 1 MiB (no growth); issue asks 10 min | "
       << verdict(growth, 1.0, true, "%.2f MiB")
       << (r.soak_minutes < 10 ? " (shorter than the 10 minutes asked)" : "") << " |\n";
  } else {
    md << "| No RSS growth over a 10-minute steady run | not run in this invocation "
          "(`--soak-minutes N`) | | not measured |\n";
  }
  {
    const double dps = find_micro(r.policy_micro, "BM_DecideProduce1000_AllPass");
    if (dps > 0)
      md << "| Fencing decisions on one core (policy_bench BM_DecideProduce1000_AllPass) | "
         << si(dps) << "partitions/s | >= 10 M/s | " << verdict(dps / 1e6, 10, false, "%.2f M/s")
         << " |\n";
  }
  for (const auto& row : r.policy_micro) {
    // Names carry suffixes such as "/iterations:3".
    const auto label_at = row.label.find("bytes_per_partition=");
    if (row.name.rfind("BM_ViewMemory100000", 0) == 0 && label_at != std::string::npos) {
      const double b = std::atof(row.label.c_str() + label_at + 20);
      md << "| View memory per partition at 100,000 partitions (allocator's count, policy_bench "
            "BM_ViewMemory100000) | " << fmt("%.0f", b) << " bytes | < 200 bytes | "
         << verdict(b, 200, true, "%.0f bytes") << " |\n";
    }
    if (row.name.rfind("BM_DecideProduce10000_AllPass_View100000", 0) == 0)
      md << "| Decision time for a Produce naming 10,000 partitions, view of 100,000 "
            "(policy_bench) | " << fmt("%.1f µs", row.real_ns / 1e3) << " per request | "
            "(no target) | - |\n";
  }
  md << "\nWhere a target is missed, [PROFILE.md](PROFILE.md) shows where epochgate's cycles go "
        "and the changes to proxy/ it suggests.\n\n";

  // ---- produce ----
  if (!pd[kDirect]["acks=1"].msgs_per_sec.empty()) {
  md << "## Produce throughput\n\n";
  md << "1 KiB messages round-robin over 16 partitions, `linger.ms=5` (batching on), no "
        "compression, at most "
     << "20,000 messages queued in the client, as fast as it goes for " << fmt("%.0f", r.seconds)
     << " s per run, " << r.rounds << " runs per configuration (median shown, min-max in "
        "brackets). Delivery latency is produce() to delivery report under that saturation "
        "(mostly queueing). CPU is the proxy process's time on a CPU (all threads, ns) during the runs, per GB of "
        "payload delivered.\n\n";
  md << "| Workload | Config | msg/s | MiB/s | delivery p50 / p99 / p99.9 (ms) | proxy CPU s/GB |\n"
        "|---|---|---|---|---|---|\n";
  for (const char* acks : {"acks=1", "acks=all"}) {
    for (int c = 0; c < kConfigCount; ++c) {
      auto it = pd[c].find(acks);
      if (it == pd[c].end() || it->second.msgs_per_sec.empty()) continue;
      ThroughputFigures& f = it->second;
      const auto mm = std::minmax_element(f.msgs_per_sec.begin(), f.msgs_per_sec.end());
      const double cpu = f.cpu_seconds_per_gb();
      md << "| produce " << acks << " | " << config_label(c) << " | " << fmt("%.0f", f.median_msgs())
         << " [" << fmt("%.0f", *mm.first) << "-" << fmt("%.0f", *mm.second) << "] | "
         << fmt("%.1f", f.median_mib()) << " | " << fmt("%.1f", f.latency.percentile(50) / 1000)
         << " / " << fmt("%.1f", f.latency.percentile(99) / 1000) << " / "
         << fmt("%.1f", f.latency.percentile(99.9) / 1000) << " | "
         << (cpu > 0 ? fmt("%.2f", cpu) : std::string("-")) << errors_of(f.errors) << " |\n";
    }
  }
  md << "\nRatios (median throughput; CPU per GB for the proxies). The headline ratios are "
        "against (e), the splice relay: the floor a proxy that moves bytes reaches here. "
        "CPU/GB (f)/(e) is what the two copies through user space alone cost over that floor "
        "(the copy relay reads and writes every byte and does nothing else), and CPU/GB "
        "(d)/(f) what epochgate adds on top of those copies.\n\n";
  md << "| Workload | **(d)/(e)** | **CPU/GB (d)/(e)** | (c)/(e) | CPU/GB (c)/(e) | CPU/GB (f)/(e) "
        "| CPU/GB (d)/(f) | (e)/(a) | (c)/(a) | (d)/(a) | (d)/(b) | CPU/GB (d)/(b) | CPU/GB "
        "(c)/(b) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  auto ratio_row = [&](const std::string& name, ThroughputFigures* f) {
    md << "| " << name << " | **"
       << ratio(f[kEpochgateEnforce].median_msgs(), f[kSpliceRelay].median_msgs()) << "** | **"
       << ratio(f[kEpochgateEnforce].cpu_seconds_per_gb(), f[kSpliceRelay].cpu_seconds_per_gb())
       << "** | " << ratio(f[kEpochgateOff].median_msgs(), f[kSpliceRelay].median_msgs()) << " | "
       << ratio(f[kEpochgateOff].cpu_seconds_per_gb(), f[kSpliceRelay].cpu_seconds_per_gb())
       << " | " << ratio(f[kCopyRelay].cpu_seconds_per_gb(), f[kSpliceRelay].cpu_seconds_per_gb())
       << " | "
       << ratio(f[kEpochgateEnforce].cpu_seconds_per_gb(), f[kCopyRelay].cpu_seconds_per_gb())
       << " | " << ratio(f[kSpliceRelay].median_msgs(), f[kDirect].median_msgs());
    md << " | " << ratio(f[kEpochgateOff].median_msgs(), f[kDirect].median_msgs())
       << " | " << ratio(f[kEpochgateEnforce].median_msgs(), f[kDirect].median_msgs()) << " | "
       << ratio(f[kEpochgateEnforce].median_msgs(), f[kHaproxy].median_msgs()) << " | "
       << ratio(f[kEpochgateEnforce].cpu_seconds_per_gb(), f[kHaproxy].cpu_seconds_per_gb())
       << " | " << ratio(f[kEpochgateOff].cpu_seconds_per_gb(), f[kHaproxy].cpu_seconds_per_gb())
       << " |\n";
  };
  for (const char* acks : {"acks=1", "acks=all"}) {
    if (pd[kDirect][acks].msgs_per_sec.empty()) continue;
    ThroughputFigures f[kConfigCount];
    for (int c = 0; c < kConfigCount; ++c) f[c] = pd[c][acks];
    ratio_row(std::string("produce ") + acks, f);
  }
  if (!r.consume[kDirect].msgs_per_sec.empty()) ratio_row("consume", r.consume);
  md << "\n";
  }

  // ---- consume ----
  if (!r.consume[kDirect].msgs_per_sec.empty()) {
    md << "## Consume throughput\n\n";
    md << "A consumer assigned all 16 partitions reads 40,000 stored 1 KiB messages from the "
          "beginning, and again from the beginning (partitions assigned anew) until "
       << r.seconds << " s have passed (one pass is too short for the proxy's CPU clock); "
          "clock from its first message to its last, "
       << r.rounds << " runs per configuration.\n\n";
    md << "| Config | msg/s | MiB/s | proxy CPU s/GB |\n|---|---|---|---|\n";
    for (int c = 0; c < kConfigCount; ++c) {
      ThroughputFigures& f = r.consume[c];
      const double cpu = f.cpu_seconds_per_gb();
      md << "| " << config_label(c) << " | " << fmt("%.0f", f.median_msgs()) << " | "
         << fmt("%.1f", f.median_mib()) << " | " << (cpu > 0 ? fmt("%.2f", cpu) : std::string("-"))
         << errors_of(f.errors) << " |\n";
    }
    md << "\n";
  }
  md << r.sweep_section;

  // ---- ping-pong ----
  if (!r.ping_api_versions[kDirect].rtt.empty()) {
    md << "## Added latency (ping-pong)\n\n";
    md << "One request at a time on one raw connection per configuration (TCP_NODELAY), the "
          "connections (one per configuration) taking turns one round trip each (so a burst of noise on the shared "
          "machine hits all of them alike); "
       << r.ping_count << " measured round trips per configuration per run after 200 warm-up, "
       << r.rounds << " runs merged. \"Added\" is the configuration's percentile minus "
          "direct's. Through epochgate both requests are decoded and re-encoded (ApiVersions "
          "capping, Metadata address rewriting); HAProxy only copies bytes.\n\n";
    md << "| Request | Config | p50 (µs) | p99 (µs) | p99.9 (µs) | added p50 | added p99 | p50 / p99 "
          "of each run (µs) |\n|---|---|---|---|---|---|---|---|\n";
    for (int kind = 0; kind < 2; ++kind) {
      PingPongFigures* pp = kind == 0 ? r.ping_api_versions : r.ping_metadata;
      const char* name = kind == 0 ? "ApiVersions v2" : "Metadata v4, 1 topic";
      const double b50 = pp[kDirect].rtt.percentile(50), b99 = pp[kDirect].rtt.percentile(99);
      for (int c = 0; c < kConfigCount; ++c) {
        LatencySamples& s = pp[c].rtt;
        md << "| " << name << " | " << config_label(c) << " | " << fmt("%.1f", s.percentile(50))
           << " | " << fmt("%.1f", s.percentile(99)) << " | " << fmt("%.1f", s.percentile(99.9))
           << " | " << (c == kDirect ? "-" : fmt("%+.1f", s.percentile(50) - b50)) << " | "
           << (c == kDirect ? "-" : fmt("%+.1f", s.percentile(99) - b99)) << " | ";
        for (size_t i = 0; i < pp[c].round_p50.size(); ++i)
          md << (i ? ", " : "") << fmt("%.0f", pp[c].round_p50[i]) << " / "
             << fmt("%.0f", pp[c].round_p99[i]);
        md << errors_of(pp[c].errors) << " |\n";
      }
    }
    md << "\n";
  }

  for (int c : {kEpochgateOff, kEpochgateEnforce}) {
    const auto& h = r.proxy_held[c];
    if (h.empty() || h.back().second <= 0) continue;
    const double total = h.back().second;
    if (c == kEpochgateOff)
      md << "epochgate's own account of the same round trips "
            "(`epochgate_proxy_latency_seconds`: time it held each request plus its response, "
            "the broker's time and the kernel's wake-ups excluded; difference of two scrapes), "
            "share of round trips at or under each bucket bound:\n\n"
            "| Config | round trips | <= 10 µs | <= 25 µs | <= 50 µs | <= 100 µs | <= 250 µs |\n"
            "|---|---|---|---|---|---|---|\n";
    md << "| " << config_label(c) << " | " << fmt("%.0f", total);
    for (double bound : {0.00001, 0.000025, 0.00005, 0.0001, 0.00025}) {
      double cum = -1;
      for (const auto& [le, count] : h) {
        if (std::fabs(le - bound) < bound * 1e-6) cum = count;
      }
      md << " | " << (cum < 0 ? std::string("?") : fmt("%.2f%%", 100.0 * cum / total));
    }
    md << " |\n";
    if (c == kEpochgateEnforce) md << "\n";
  }

  // ---- fixed rate ----
  if (!r.fixed_rate_produce[kDirect].latency.empty()) {
    md << "## Latency at low load\n\n";
    md << "All configurations at the same time, each with its own producer (acks=1, "
       << fmt("%.0f", r.latency_rate) << " messages/s, `linger.ms=0`, "
       << fmt("%.0f", r.latency_seconds)
       << " s per run) and its own consumer reading the same messages "
          "(`fetch.wait.max.ms=10`), so the machine is far from saturated and its noise falls on "
          "all of them alike. Produce is produce() to delivery report. End-to-end is send to "
          "receipt; the mock cluster answers a Fetch that finds no data only after its MaxWait "
          "(new data does not wake it), so end-to-end is dominated by that wait in every "
          "configuration. See [latency.png](latency.png).\n\n";
    md << "| Config | produce p50 / p99 / p99.9 (µs) | end-to-end p50 / p99 / p99.9 (ms) |\n"
          "|---|---|---|\n";
    for (int c = 0; c < kConfigCount; ++c) {
      LatencySamples& p = r.fixed_rate_produce[c].latency;
      LatencySamples& e = r.fixed_rate_e2e[c];
      md << "| " << config_label(c) << " | " << fmt("%.0f", p.percentile(50)) << " / "
         << fmt("%.0f", p.percentile(99)) << " / " << fmt("%.0f", p.percentile(99.9)) << " | "
         << fmt("%.2f", e.percentile(50) / 1000) << " / " << fmt("%.2f", e.percentile(99) / 1000)
         << " / " << fmt("%.2f", e.percentile(99.9) / 1000)
         << errors_of(r.fixed_rate_produce[c].errors) << " |\n";
    }
    md << "\n![latency](latency.png)\n\n";
  }

  // ---- idle ----
  bool any_idle = false;
  for (int c = 0; c < kConfigCount; ++c) any_idle |= r.idle[c].measured;
  if (any_idle) {
    md << "## Memory at " << r.idle_connections_target << " idle connections\n\n";
    md << "Raw client connections to the bootstrap listener, opened one after another, each "
          "after one ApiVersions round trip, held open 1.5 s; RSS (VmRSS) of the proxy process "
          "(for epochgate each also holds its upstream connection). Measured first on fresh "
          "processes (per-connection figure), and again after all the load above (the heap then "
          "already holds the memory the load used, so the difference says little). (a) is not "
          "a separate process here.\n\n";
    md << "| When | Config | connections | RSS before (MiB) | RSS with them (MiB) | per connection "
          "(KiB) | RSS 1.5 s after closing (MiB) |\n|---|---|---|---|---|---|---|\n";
    for (int pass = 0; pass < 2; ++pass) {
      for (int c = 0; c < kConfigCount; ++c) {
        const IdleFigures& f = pass == 0 ? r.idle[c] : r.idle_after_load[c];
        if (!f.measured) continue;
        md << "| " << (pass == 0 ? "fresh" : "after load") << " | " << config_label(c) << " | "
           << f.connections << " | " << fmt("%.1f", f.rss_before_kib / 1024.0) << " | "
           << fmt("%.1f", f.rss_at_kib / 1024.0) << " | "
           << fmt("%.1f", f.connections > 0 ? static_cast<double>(f.rss_at_kib - f.rss_before_kib) /
                                                  f.connections
                                            : 0)
           << " | " << fmt("%.1f", f.rss_after_close_kib / 1024.0) << " |\n";
      }
    }
    md << "\n";
  }

  // ---- leader move ----
  if (!r.leader_moves.empty()) {
    md << "## Recovery from a leader move\n\n";
    md << "Idempotent producer, acks=all, 1,000 messages/s over 16 partitions of topic `m`; "
          "every 2 s one partition's leader moves to another broker "
          "(`rd_kafka_mock_partition_set_leader`, which bumps the epoch), 3 moves per run. "
          "Recovery = move to the first delivery acknowledged by the new leader "
          "(`rd_kafka_message_broker_id`). Latencies are of messages live during the 2 s after "
          "each move. The cluster without hints has Produce capped at v9 and Fetch at v15 (as "
          "Kafka before 3.7); through epochgate the client still gets Produce v10 with hints "
          "(KIP-951 bridge). The three paths alternate in one run; each on its own mock "
          "cluster except that epochgate fronts the no-hints one.\n\n";
    md << "| Client | Path | moves | recovery median / max (ms) | moved partition p99 / max "
          "(ms) | all partitions p99 (ms) | failed messages |\n|---|---|---|---|---|---|---|\n";
    std::map<std::string, std::vector<std::pair<double, double>>> by_client;  // median, p99
    for (auto& f : r.leader_moves) {
      std::vector<double> rec;
      double mx = 0;
      for (const auto& m : f.moves) {
        if (m.recovered) rec.push_back(m.recovery_ms);
        mx = std::max(mx, m.recovery_ms);
      }
      by_client[f.client].push_back({median(rec), f.window_moved.percentile(99) / 1000});
      md << "| " << f.client << " | " << f.label << " | " << f.moves.size() << " ("
         << rec.size() << " recovered) | " << fmt("%.1f", median(rec)) << " / "
         << fmt("%.1f", mx) << " | " << fmt("%.1f", f.window_moved.percentile(99) / 1000)
         << " / " << fmt("%.1f", f.window_moved.max() / 1000) << " | "
         << fmt("%.1f", f.window_all.percentile(99) / 1000) << " | " << f.failed
         << errors_of(f.errors) << " |\n";
    }
    md << "\n";
    for (const auto& [client, v] : by_client) {
      if (v.size() < 3) continue;
      md << "- " << client << ": epochgate (hints) / direct (no hints): recovery median "
         << ratio(v[1].first, v[0].first) << ", moved-partition p99 "
         << ratio(v[1].second, v[0].second) << "; native hints / no hints: recovery "
         << ratio(v[2].first, v[0].first) << ".\n";
    }
    if (!r.leader_metrics.empty()) {
      double hints = 0;
      for (const auto& l : r.leader_metrics) {
        if (l.rfind("epochgate_hints_total", 0) == 0)
          hints += std::atof(l.c_str() + l.rfind(' ') + 1);
      }
      md << "\nepochgate's own counters after all its moves (`/metrics`):\n\n```\n";
      for (const auto& l : r.leader_metrics) md << l << "\n";
      md << "```\n";
      if (hints == 0)
        md << "\nepochgate sent no hint in these moves. When the old leader's "
              "NOT_LEADER_OR_FOLLOWER came back, epochgate's view did not know the new leader "
              "yet (it learns from that error and refreshes: the urgent refreshes above), so "
              "there was nothing to backfill; by the client's retry the client had refreshed "
              "its own metadata and went to the new leader, so no request reached a stale "
              "leader for epochgate to fence. Recovery through epochgate is therefore the "
              "client's own (retry backoff plus a Metadata round trip), as direct.\n";
    }
    md << "\nEach move:\n\n| Client | Path | partition | from -> to | recovery (ms) | moved p99 "
          "(ms) |\n|---|---|---|---|---|---|\n";
    for (auto& f : r.leader_moves) {
      for (const auto& m : f.moves)
        md << "| " << f.client << " | " << f.label << " | " << m.partition << " | " << m.from
           << " -> " << m.to << " | "
           << (m.recovered ? fmt("%.1f", m.recovery_ms) : std::string("never")) << " | "
           << fmt("%.1f", m.moved_p99_ms) << " |\n";
    }
    md << "\n";
  }

  // ---- micro ----
  if (!r.codec_micro.empty() || !r.policy_micro.empty()) {
    md << "## Microbenchmarks (Google Benchmark, one thread)\n\n";
    md << "| Program | Benchmark | time per iteration | items/s | bytes/s | label |\n"
          "|---|---|---|---|---|---|\n";
    for (int k = 0; k < 2; ++k) {
      const auto& rows = k == 0 ? r.codec_micro : r.policy_micro;
      for (const auto& row : rows) {
        md << "| " << (k == 0 ? "codec_bench" : "policy_bench") << " | " << row.name << " | "
           << (row.real_ns >= 1e6 ? fmt("%.2f ms", row.real_ns / 1e6)
                                  : fmt("%.2f µs", row.real_ns / 1e3))
           << " | " << (row.items_per_second > 0 ? si(row.items_per_second) + "/s" : "-") << " | "
           << (row.bytes_per_second > 0 ? si(row.bytes_per_second) + "B/s" : "-") << " | "
           << row.label;
        for (const auto& [name, value] : row.counters) {
          if (name == "partitions_per_request" || name == "fenced") continue;
          md << (row.label.empty() ? "" : "; ") << name << "=" << fmt("%.1f", value);
        }
        md << " |\n";
      }
    }
    md << "\n";
  }
  if (!r.micro_error.empty()) md << "Microbenchmarks: " << r.micro_error << "\n\n";

  // ---- soak ----
  if (!r.soak.empty()) {
    md << "## Steady run memory (" << fmt("%.0f", r.soak_minutes) << " minutes)\n\n";
    md << "epochgate enforcing, produce acks=1 at 5,000 messages/s, plus 50 connections "
          "opened (ApiVersions) and closed every 10 s. RSS sampled every 10 s."
       << (r.soak_error.empty() ? "" : " Producer error: " + r.soak_error) << "\n\n";
    md << "| minute | RSS (MiB) | messages delivered |\n|---|---|---|\n";
    for (const auto& s : r.soak)
      md << "| " << fmt("%.2f", s.minute) << " | " << fmt("%.2f", s.rss_kib / 1024.0) << " | "
         << s.delivered << " |\n";
    md << "\n";
  }
  if (!r.scale_sections.empty())
    md << r.scale_sections << "(The scale scenarios took " << fmt("%.0f", r.scale_seconds)
       << " s of this run.)\n\n";
  for (const auto& n : r.notes) md << "Note: " << n << "\n\n";

  // ---- plot data ----
  bool ok = true;
  for (int c = 0; c < kConfigCount; ++c) {
    if (!r.ping_api_versions[c].rtt.empty())
      ok &= r.ping_api_versions[c].rtt.write_percentile_curve(out_dir + "/pingpong_" +
                                                              config_key(c) + ".dat");
    if (!r.fixed_rate_produce[c].latency.empty())
      ok &= r.fixed_rate_produce[c].latency.write_percentile_curve(out_dir + "/produce_" +
                                                                   config_key(c) + ".dat");
  }
  std::ofstream gp(out_dir + "/latency.gp");
  gp << "set terminal pngcairo size 1300,520 font 'sans,10'\n"
        "set output 'latency.png'\n"
        "set multiplot layout 1,2 title 'epochgate vs HAProxy vs direct (librdkafka mock cluster, "
     << sysconf(_SC_NPROCESSORS_ONLN) << "-core machine)'\n"
        "set logscale x\nset logscale y\nset grid\nset key top left\n"
        "set xrange [1:10000]\n"
        "set xtics ('p0' 1, 'p50' 2, 'p90' 10, 'p99' 100, 'p99.9' 1000, 'p99.99' 10000)\n"
        "set xlabel 'percentile'\n";
  const char* colors[kConfigCount] = {"#000000", "#1f77b4", "#2ca02c",
                                      "#d62728", "#9467bd", "#8c564b"};
  for (int panel = 0; panel < 2; ++panel) {
    gp << "set title '"
       << (panel == 0 ? "Ping-pong round trip, ApiVersions v2, one at a time"
                      : "Produce delivery latency, acks=1, linger.ms=0, fixed rate")
       << "'\nset ylabel '" << (panel == 0 ? "round trip (us)" : "produce() to report (us)")
       << "'\nplot ";
    bool first = true;
    for (int c = 0; c < kConfigCount; ++c) {
      if (!first) gp << ", \\\n     ";
      first = false;
      gp << "'" << (panel == 0 ? "pingpong_" : "produce_") << config_key(c)
         << ".dat' using (1/(1-$1/100)):2 with lines lw 2 lc rgb '" << colors[c] << "' title '"
         << config_label(c) << "'";
    }
    gp << "\n";
  }
  gp << "unset multiplot\n";
  ok &= static_cast<bool>(gp);

  std::ofstream out(out_dir + "/RESULTS.md");
  out << md.str();
  return ok && static_cast<bool>(out);
}

}  // namespace epochgate::bench
