// bench/kafka_load: the record-size sweep (size_sweep.h).
#include "size_sweep.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "bench_results.h"
#include "client_load.h"
#include "embedded_cluster.h"
#include "proxy_process.h"

namespace epochgate::bench {
namespace {

// What one workload at one size measured for one configuration, summed over
// rounds.
struct Cell {
  double payload_bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  double broker_cpu_seconds = 0;  ///< the mock cluster's thread; < 0 once unknown
  WireShape shape;
  std::vector<std::string> errors;
  /// Each round's own figures, in round order: MiB/s and proxy CPU s/GB.
  std::vector<double> round_mib_per_sec, round_cpu_per_gb;
  double mib_per_sec() const { return seconds > 0 ? payload_bytes / seconds / 1048576.0 : 0; }
  double cpu_per_gb() const { return payload_bytes > 0 ? cpu_seconds / (payload_bytes / 1e9) : 0; }
  double broker_cpu_per_gb() const {
    return payload_bytes > 0 && broker_cpu_seconds >= 0 ? broker_cpu_seconds / (payload_bytes / 1e9)
                                                        : 0;
  }
};

void add_shape(WireShape* to, const WireShape& from) {
  to->requests += from.requests;
  to->bytes += from.bytes;
  to->batches += from.batches;
  to->batch_bytes += from.batch_bytes;
  to->batch_records += from.batch_records;
}

std::string f(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string ratio(double num, double den) {
  return num > 0 && den > 0 ? f("%.2f", num / den) : "n/a";
}

// The goal's ratios round by round: each round's epochgate figure over the
// same round's other configuration (they ran minutes apart at most, in
// rotated order), so a row is judged against this machine's round-to-round
// noise, not on the means alone.
struct RoundRatios {
  std::vector<double> values;
  void add(double num, double den) {
    if (num > 0 && den > 0) values.push_back(num / den);
  }
  /// "median (min-max)", or "n/a".
  std::string label() const {
    if (values.empty()) return "n/a";
    std::vector<double> v = values;
    std::sort(v.begin(), v.end());
    const double median =
        v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    if (v.size() == 1) return f("%.2f", median);
    return f("%.2f", median) + " (" + f("%.2f", v.front()) + "-" + f("%.2f", v.back()) + ")";
  }
};

std::string size_label(int bytes) {
  if (bytes >= 1048576 && bytes % 1048576 == 0) return std::to_string(bytes / 1048576) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string bytes_label(double bytes) {
  if (bytes >= 1048576) return f("%.2f MiB", bytes / 1048576);
  if (bytes >= 1024) return f("%.1f KiB", bytes / 1024);
  return f("%.0f B", bytes);
}

struct Workload {
  std::string key;    ///< "produce acks=1", "produce acks=all", "fetch", "run.sh produce"
  std::string acks;   ///< produce only
  bool fetch = false;
  bool runsh_shape = false;  ///< bench/run.sh's produce settings (1 KiB only)
  bool small_frames = false; ///< 16 KiB batches, 1 MiB in flight (records below 1 MiB)
};

}  // namespace

ProduceSpec sweep_produce_spec(const SweepOptions& o, const std::string& bootstrap,
                               const std::string& topic, int size, bool small_frames) {
  ProduceSpec spec;
  spec.bootstrap = bootstrap;
  spec.topic = topic;
  spec.message_bytes = size;
  spec.seconds = o.seconds;
  spec.window_messages = 100000;  // librdkafka's default; the bytes bound is the one that acts
  spec.window_kbytes = o.window_kbytes;
  spec.batch_bytes = std::max(1000000, size + 65536);
  spec.max_message_bytes = std::max(1000000, 2 * size + 65536);
  spec.warmup_messages = std::max(2, std::min(200, (4 << 20) / size));
  spec.wire_shape = true;
  if (small_frames) {
    // Batches of kSmallFrameBatchBytes, closed when full (linger.ms far
    // longer than filling one takes), 1 MiB in flight: every configuration
    // gets requests of the same size, whatever its latency, so their CPU
    // per byte compares; the per-request cost shows. (With linger.ms 0 a
    // request carried what accumulated during the previous round trip,
    // so a proxy's latency set its own request size.)
    spec.linger_ms = kSmallFrameLingerMs;
    spec.batch_bytes = kSmallFrameBatchBytes;
    spec.window_kbytes = 1024;
  }
  return spec;
}

ProduceSpec sweep_fetch_fill_spec(const SweepOptions& o, const std::string& bootstrap,
                                  const std::string& topic, int size) {
  ProduceSpec fill = sweep_produce_spec(o, bootstrap, topic, size, false);
  fill.seconds = 0.01;
  fill.warmup_messages = std::max(32, (32 << 20) / size);
  fill.wire_shape = false;
  // 1,000 records: at 100 B the ~100 KB batches linger.ms 5 made on average
  // here; from 1 KiB up batch.size closes them first, as it mostly did.
  fill.linger_ms = 1000;
  fill.batch_messages = 1000;
  return fill;
}

std::string run_size_sweep(const SweepOptions& o, const std::vector<SweepTarget>& targets) {
  auto log = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  const std::vector<Workload> workloads = {{"produce acks=1", "1", false, false},
                                           {"produce acks=all", "all", false, false},
                                           {"fetch", "", true, false},
                                           {"run.sh produce acks=1", "1", false, true},
                                           {"produce acks=1 small frames", "1", false, false,
                                            true}};
  // cells[workload][size][config]
  std::map<std::string, std::map<int, std::map<int, Cell>>> cells;
  for (int size : o.sizes) {
    const std::string ptopic = "s" + std::to_string(size);
    const std::string ftopic = "f" + std::to_string(size);
    // Fetch data, written straight into each cluster (not through the
    // proxy under test).
    int fetch_records = 0;
    for (const SweepTarget& t : targets) {
      t.cluster->create_topic(ptopic, 16);
      t.cluster->create_topic(ftopic, 16);
      const ProduceSpec fill = sweep_fetch_fill_spec(o, t.cluster->bootstrap(), ftopic, size);
      fetch_records = fill.warmup_messages;
      ProduceResult pr = run_produce(fill);
      if (!pr.ok) log("sweep fetch preload " + size_label(size) + ": " + pr.error);
    }
    for (const Workload& w : workloads) {
      if (!o.workloads.empty() && o.workloads.count(w.key) == 0) continue;
      if (w.runsh_shape && size != 1024) continue;
      if (w.small_frames && size >= (1 << 20)) continue;
      for (int round = 0; round < o.rounds; ++round) {
        for (size_t i = 0; i < targets.size(); ++i) {
          const SweepTarget& t = targets[(i + static_cast<size_t>(round)) % targets.size()];
          Cell& cell = cells[w.key][size][t.config];
          const double cpu0 = t.pid > 0 ? cpu_seconds_of(t.pid) : 0;
          const double broker0 = thread_cpu_seconds_of(t.cluster->thread_id());
          double bytes = 0, seconds = 0;
          WireShape shape;
          std::string error;
          if (w.fetch) {
            ConsumeSpec cs;
            cs.bootstrap = t.bootstrap;
            cs.topic = ftopic;
            cs.max_messages = fetch_records;
            cs.repeat_for_seconds = o.seconds;
            cs.timeout_seconds = 30 + o.seconds;
            cs.wire_shape = true;
            ConsumeResult cr = run_consume(cs, nullptr, nullptr);
            bytes = static_cast<double>(cr.bytes);
            seconds = cr.seconds;
            shape = cr.shape;
            error = cr.error;
          } else {
            ProduceSpec ps = sweep_produce_spec(o, t.bootstrap, ptopic, size, w.small_frames);
            ps.acks = w.acks;
            if (w.runsh_shape) {  // bench/run.sh's produce: 20,000 messages in flight
              ps.window_messages = 20000;
              ps.window_kbytes = 0;
            }
            ProduceResult pr = run_produce(ps);
            bytes = static_cast<double>(pr.delivered) * size;
            seconds = pr.seconds;
            shape = pr.shape;
            error = pr.error;
          }
          const double cpu = t.pid > 0 ? cpu_seconds_of(t.pid) - cpu0 : 0;
          const double broker1 = thread_cpu_seconds_of(t.cluster->thread_id());
          cell.payload_bytes += bytes;
          cell.seconds += seconds;
          cell.cpu_seconds += cpu;
          cell.round_mib_per_sec.push_back(seconds > 0 ? bytes / seconds / 1048576 : 0);
          cell.round_cpu_per_gb.push_back(bytes > 0 && t.pid > 0 ? cpu / (bytes / 1e9) : 0);
          if (broker0 < 0 || broker1 < 0 || cell.broker_cpu_seconds < 0)
            cell.broker_cpu_seconds = -1;
          else
            cell.broker_cpu_seconds += broker1 - broker0;
          add_shape(&cell.shape, shape);
          if (!error.empty()) cell.errors.push_back(error);
          log("sweep " + w.key + " " + size_label(size) + " round " + std::to_string(round + 1) +
              " " + config_label(t.config) + ": " +
              f("%.1f MiB/s", seconds > 0 ? bytes / seconds / 1048576 : 0) +
              f(", cpu %.2f s", cpu) + f(", broker cpu %.2f s", broker1 - broker0) +
              f(", %.0f B/request", shape.bytes_per_request()) +
              (error.empty() ? "" : " " + error));
        }
      }
    }
  }

  // Rendering: ratios first (the goal), then absolute figures and shapes.
  std::ostringstream md;
  md << "## Record-size sweep\n\n"
     << "Produce (acks=1, acks=all) and Fetch at each record size, the configurations "
        "alternating inside the run (order rotated per round), "
     << o.rounds << " round(s) of " << f("%.0f", o.seconds)
     << " s each. Producer: linger.ms 5, batch.size 1,000,000 (librdkafka's defaults), "
     << o.window_kbytes / 1024
     << " MiB in flight; consumer: librdkafka's defaults, reading a preloaded topic "
        "(32 MiB) again and again. epochgate is (d), enforcing (fencing on). `run.sh produce` is "
        "bench/run.sh's produce workload (1 KiB, 20,000 messages in flight) for comparison; "
        "`small frames` is batch.size "
     << kSmallFrameBatchBytes << " closed when full (linger.ms " << kSmallFrameLingerMs
     << ") with 1 MiB in flight: requests of one batch (one record from that size up) in "
        "every configuration, the shape where the cost per request shows. "
        "CPU is the proxy process's time on a CPU (all threads, ns) per GB of record values.\n\n";
  md << "| workload | record | (d) MiB/s | ÷ direct | ÷ HAProxy | (d) CPU s/GB | ÷ splice | "
        "÷ copy | ÷ HAProxy |\n|---|---|---|---|---|---|---|---|---|\n";
  auto rows = [&](auto&& body) {
    for (const Workload& w : workloads) {
      for (int size : o.sizes) {
        if (cells[w.key].count(size) == 0) continue;
        body(w, size, cells[w.key][size]);
      }
    }
  };
  rows([&](const Workload& w, int size, std::map<int, Cell>& c) {
    const Cell& eg = c[kEpochgateEnforce];
    md << "| " << w.key << " | " << size_label(size) << " | " << f("%.1f", eg.mib_per_sec())
       << " | " << ratio(eg.mib_per_sec(), c[kDirect].mib_per_sec()) << " | "
       << ratio(eg.mib_per_sec(), c[kHaproxy].mib_per_sec()) << " | "
       << f("%.2f", eg.cpu_per_gb()) << " | "
       << ratio(eg.cpu_per_gb(), c[kSpliceRelay].cpu_per_gb()) << " | "
       << ratio(eg.cpu_per_gb(), c[kCopyRelay].cpu_per_gb()) << " | "
       << ratio(eg.cpu_per_gb(), c[kHaproxy].cpu_per_gb()) << " |\n";
  });
  md << "\nThe goal round by round (issue: CPU/GB at most 1.25x the splice relay's and at most "
        "HAProxy's, throughput at least HAProxy's). Each round's (d) over the same round's other "
        "configuration, median (lowest-highest) of the "
     << o.rounds
     << " rounds, and in how many rounds all three held: a row met in some rounds only is "
        "within this machine's noise of the goal.\n\n"
        "| workload | record | CPU ÷ splice relay | CPU ÷ HAProxy | MiB/s ÷ HAProxy | rounds "
        "meeting all three |\n|---|---|---|---|---|---|\n";
  rows([&](const Workload& w, int size, std::map<int, Cell>& c) {
    const Cell& eg = c[kEpochgateEnforce];
    RoundRatios vs_relay, vs_haproxy_cpu, vs_haproxy_mibs;
    size_t all_three = 0, rounds = 0;
    for (size_t r = 0; r < eg.round_cpu_per_gb.size(); ++r) {
      auto at = [r](const std::vector<double>& v) { return r < v.size() ? v[r] : 0.0; };
      const double relay = at(c[kSpliceRelay].round_cpu_per_gb);
      const double hap_cpu = at(c[kHaproxy].round_cpu_per_gb);
      const double hap_mibs = at(c[kHaproxy].round_mib_per_sec);
      vs_relay.add(eg.round_cpu_per_gb[r], relay);
      vs_haproxy_cpu.add(eg.round_cpu_per_gb[r], hap_cpu);
      vs_haproxy_mibs.add(at(eg.round_mib_per_sec), hap_mibs);
      if (eg.round_cpu_per_gb[r] <= 0 || relay <= 0 || hap_cpu <= 0 || hap_mibs <= 0) continue;
      ++rounds;
      if (eg.round_cpu_per_gb[r] <= 1.25 * relay && eg.round_cpu_per_gb[r] <= hap_cpu &&
          at(eg.round_mib_per_sec) >= hap_mibs)
        ++all_three;
    }
    md << "| " << w.key << " | " << size_label(size) << " | " << vs_relay.label() << " | "
       << vs_haproxy_cpu.label() << " | " << vs_haproxy_mibs.label() << " | "
       << (rounds ? std::to_string(all_three) + " of " + std::to_string(rounds) : "n/a")
       << " |\n";
  });
  md << "\nEvery configuration, MiB/s and proxy CPU s/GB:\n\n| workload | record |";
  for (const SweepTarget& t : targets) md << " " << config_label(t.config) << " |";
  md << "\n|---|---|";
  for (size_t i = 0; i < targets.size(); ++i) md << "---|";
  md << "\n";
  rows([&](const Workload& w, int size, std::map<int, Cell>& c) {
    md << "| " << w.key << " | " << size_label(size) << " |";
    for (const SweepTarget& t : targets) {
      const Cell& cell = c[t.config];
      md << " " << f("%.1f", cell.mib_per_sec());
      if (t.pid > 0) md << " / " << f("%.2f", cell.cpu_per_gb());
      if (!cell.errors.empty()) md << " (error: " << cell.errors.front() << ")";
      md << " |";
    }
    md << "\n";
  });
  md << "\nThe brokers' CPU (the mock cluster's one thread, in the bench process) per GB of "
        "record values in each configuration, then the proxy's and the brokers' together. On one "
        "machine the brokers read over loopback the very bytes the proxy sent, so how the proxy "
        "sends them (copied into fresh socket buffers, or spliced: the producer's own pages, "
        "written earlier) changes what the brokers pay, and with two cores shared it changes "
        "everyone's throughput; across hosts the brokers read from a network card and pay the "
        "same whatever the proxy does. Broker s/GB, (proxy + broker) s/GB:\n\n"
        "| workload | record |";
  for (const SweepTarget& t : targets) md << " " << config_label(t.config) << " |";
  md << " (d) proxy + broker ÷ HAProxy's | ÷ splice relay's |\n|---|---|";
  for (size_t i = 0; i < targets.size(); ++i) md << "---|";
  md << "---|---|\n";
  auto system_per_gb = [](const Cell& cell) {
    return cell.broker_cpu_per_gb() > 0 ? cell.cpu_per_gb() + cell.broker_cpu_per_gb() : 0;
  };
  rows([&](const Workload& w, int size, std::map<int, Cell>& c) {
    md << "| " << w.key << " | " << size_label(size) << " |";
    for (const SweepTarget& t : targets) {
      const Cell& cell = c[t.config];
      md << " " << (cell.broker_cpu_per_gb() > 0 ? f("%.2f", cell.broker_cpu_per_gb()) : "n/a");
      if (t.pid > 0 && cell.broker_cpu_per_gb() > 0) md << ", " << f("%.2f", system_per_gb(cell));
      md << " |";
    }
    const double eg = system_per_gb(c[kEpochgateEnforce]);
    md << " " << ratio(eg, system_per_gb(c[kHaproxy])) << " | "
       << ratio(eg, system_per_gb(c[kSpliceRelay])) << " |\n";
  });
  md << "\nThe frames each workload made (librdkafka's statistics: Produce requests sent and "
        "their bytes, record batches and their records; Fetch requests and the bytes received), "
        "through epochgate and through HAProxy; partitions per request = batches per "
        "request:\n\n"
        "| workload | record | (d) bytes/request | partitions/request | records/batch | "
        "requests/s | HAProxy bytes/request |\n|---|---|---|---|---|---|---|\n";
  rows([&](const Workload& w, int size, std::map<int, Cell>& c) {
    const Cell& eg = c[kEpochgateEnforce];
    md << "| " << w.key << " | " << size_label(size) << " | "
       << bytes_label(eg.shape.bytes_per_request()) << " | "
       << (w.fetch ? "" : f("%.1f", eg.shape.batches_per_request())) << " | "
       << (w.fetch ? "" : f("%.1f", eg.shape.records_per_batch())) << " | "
       << f("%.0f", eg.seconds > 0 ? eg.shape.requests / eg.seconds : 0) << " | "
       << bytes_label(c[kHaproxy].shape.bytes_per_request()) << " |\n";
  });
  md << "\n";
  return md.str();
}

}  // namespace epochgate::bench
