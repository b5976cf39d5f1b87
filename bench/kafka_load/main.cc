// epochgate-bench: the throughput benchmark driver. In one process tree it runs
// librdkafka 2.15.1 mock clusters (in process), HAProxy and epochgate (child
// processes) and the load (librdkafka clients and raw sockets in process),
// alternating the configurations (a) direct, (b) HAProxy TCP mode,
// (c) epochgate policy off, (d) epochgate enforcing, (e) the splice relay
// (bench/splice_relay.c, a child process), and writes RESULTS.md
// plus plot data. A benchmark, not a test: it asserts nothing about speed.
#include <signal.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "bench_results.h"
#include "client_load.h"
#include "embedded_cluster.h"
#include "leader_move.h"
#include "proxy_process.h"
#include "scale.h"
#include "size_sweep.h"
#include "wire_client.h"

namespace epochgate::bench {
namespace {

struct Options {
  std::string epochgate;
  std::string haproxy = "/usr/sbin/haproxy";
  std::string splice_relay;  ///< default: splice_relay beside this program
  std::string codec_bench, policy_bench;
  std::string out = "bench-out";
  std::string command;
  std::string source_rev;
  int rounds = 5;
  double seconds = 3;
  double latency_rate = 1000;
  int idle_connections = 1000;
  int ping_count = 10000;
  double latency_seconds = 5;  ///< measured round trips per configuration per round
  double soak_minutes = 0;
  std::set<std::string> only;  // empty: all but profile and soak (soak when minutes > 0)
  std::string profile_cmd;
  double profile_seconds = 20;
  std::string profile_workload = "produce";  ///< produce (acks=1) | produce-all (acks=all) | consume
  /// The configuration the profile loads and attaches to: epochgate enforcing
  /// (d), or the same load through HAProxy (b) or the splice relay (e), so a
  /// profiler's counts can be read side by side.
  int profile_config = kEpochgateEnforce;
  bool scale = false;  ///< also the scale scenarios (scale.h); or --only scale
  ScaleContext scale_ctx;
  /// YAML appended to every epochgate configuration the bench writes (a
  /// before/after of one setting, e.g. "limits:\n  stream_fetch_min_bytes: 0\n").
  std::string epochgate_yaml;
  /// Command words put before the enforcing epochgate's argv (e.g.
  /// /usr/bin/valgrind --tool=callgrind ...; the first is a path, not looked
  /// up on PATH): the profile of a program that cannot be attached to.
  std::vector<std::string> epochgate_wrapper;
  /// The sweep's shape at this record size: its producer (produce*), or its
  /// Fetch row's preload and consumer (consume); 0: the profile's own shapes
  int profile_record_bytes = 0;
  /// ... its small-frame shape (16 KiB batches closed when full, 1 MiB in flight); with consume,
  /// 1 KiB records in 4 KiB batches fetched 4 KiB per partition, 16 KiB a response
  bool profile_small_frames = false;
  int sweep_rounds = 2;          ///< the record-size sweep (size_sweep.h); capped by --rounds
  std::vector<int> sweep_sizes;  ///< empty: the sweep's default sizes
  /// The sweep's workloads by name ("fetch", "produce acks=1", ...); empty: all.
  std::set<std::string> sweep_workloads;
  /// Non-empty: (c) runs enforcing with this YAML appended and joins the
  /// sweep beside (d), a before/after of one setting inside one run (e.g.
  /// "limits:\n  splice_min_bytes: 0\n").
  std::string sweep_c_yaml;
};

void usage() {
  std::fprintf(stderr,
               "usage: epochgate-bench --epochgate BIN [--haproxy BIN] [--splice-relay BIN]\n"
               "         [--codec-bench BIN]\n"
               "         [--policy-bench BIN] [--out DIR] [--rounds N] [--seconds S]\n"
               "         [--latency-rate MSG_PER_S] [--idle-connections N] [--ping-count N]\n"
               "         [--soak-minutes N]\n"
               "         [--scale [--scale-topics N] [--scale-partitions N]\n"
               "          [--scale-idle-connections N] [--scale-sidecars N]\n"
               "          [--scale-window S]]\n"
               "         [--only produce,consume,sweep,latency,pingpong,idle,leader,micro,soak]\n"
               "         [--epochgate-wrapper 'valgrind --tool=callgrind ...'] [--profile-record-bytes N]\n"
               "         [--profile-small-frames]\n"
               "         [--sweep-rounds N] [--sweep-sizes 100,1024,16384,1048576]\n"
               "         [--sweep-workloads fetch,produce acks=1] [--sweep-c-yaml YAML]\n"
               "         [--profile-cmd 'perf record ... -p {pid}' [--profile-seconds S]\n"
               "          [--profile-workload produce|produce-all|consume]\n"
               "          [--profile-config d|c|b|e]]\n"
               "         [--command TEXT] [--source-rev TEXT] [--epochgate-yaml TEXT]\n");
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--epochgate") o->epochgate = next();
    else if (a == "--haproxy") o->haproxy = next();
    else if (a == "--splice-relay") o->splice_relay = next();
    else if (a == "--codec-bench") o->codec_bench = next();
    else if (a == "--policy-bench") o->policy_bench = next();
    else if (a == "--out") o->out = next();
    else if (a == "--command") o->command = next();
    else if (a == "--source-rev") o->source_rev = next();
    else if (a == "--epochgate-yaml") o->epochgate_yaml = next();
    else if (a == "--rounds") o->rounds = std::atoi(next().c_str());
    else if (a == "--seconds") o->seconds = std::atof(next().c_str());
    else if (a == "--latency-rate") o->latency_rate = std::atof(next().c_str());
    else if (a == "--idle-connections") o->idle_connections = std::atoi(next().c_str());
    else if (a == "--ping-count") o->ping_count = std::atoi(next().c_str());
    else if (a == "--soak-minutes") o->soak_minutes = std::atof(next().c_str());
    else if (a == "--profile-cmd") o->profile_cmd = next();
    else if (a == "--profile-seconds") o->profile_seconds = std::atof(next().c_str());
    else if (a == "--profile-workload") o->profile_workload = next();
    else if (a == "--profile-config") {
      const std::string c = next();
      if (c == "d") o->profile_config = kEpochgateEnforce;
      else if (c == "b") o->profile_config = kHaproxy;
      else if (c == "e") o->profile_config = kSpliceRelay;
      else if (c == "c") o->profile_config = kEpochgateOff;  // enforcing + --sweep-c-yaml
      else {
        std::fprintf(stderr, "--profile-config: '%s' is not d, c, b or e\n", c.c_str());
        return false;
      }
    }
    else if (a == "--scale") o->scale = true;
    else if (a == "--epochgate-wrapper") {
      std::stringstream words(next());
      for (std::string w; words >> w;) o->epochgate_wrapper.push_back(w);
    } else if (a == "--profile-record-bytes") o->profile_record_bytes = std::atoi(next().c_str());
    else if (a == "--profile-small-frames") o->profile_small_frames = true;
    else if (a == "--sweep-rounds") o->sweep_rounds = std::atoi(next().c_str());
    else if (a == "--sweep-sizes") {
      std::stringstream list(next());
      for (std::string item; std::getline(list, item, ',');)
        o->sweep_sizes.push_back(std::atoi(item.c_str()));
    }
    else if (a == "--sweep-workloads") {
      std::stringstream list(next());
      for (std::string item; std::getline(list, item, ',');) o->sweep_workloads.insert(item);
    } else if (a == "--sweep-c-yaml") o->sweep_c_yaml = next();
    else if (a == "--scale-topics") o->scale_ctx.topics = std::atoi(next().c_str());
    else if (a == "--scale-partitions") o->scale_ctx.partitions = std::atoi(next().c_str());
    else if (a == "--scale-idle-connections")
      o->scale_ctx.idle_connections = std::atoi(next().c_str());
    else if (a == "--scale-sidecars") o->scale_ctx.sidecars = std::atoi(next().c_str());
    else if (a == "--scale-window") o->scale_ctx.sidecar_window_s = std::atof(next().c_str());
    else if (a == "--only") {
      std::stringstream list(next());
      for (std::string item; std::getline(list, item, ',');) o->only.insert(item);
    } else {
      std::fprintf(stderr, "epochgate-bench: unknown argument %s\n", a.c_str());
      return false;
    }
  }
  if (o->profile_config == kEpochgateOff && o->sweep_c_yaml.empty()) {
    std::fprintf(stderr, "--profile-config c: needs --sweep-c-yaml (what (c) adds)\n");
    return false;
  }
  return !o->epochgate.empty() && o->rounds > 0 && o->seconds > 0;
}

void log_line(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_line(const char* fmt, ...) {
  static const auto t0 = std::chrono::steady_clock::now();
  const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "[%7.1fs] ", t);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// The proxies under test and the clusters behind them.
struct Rig {
  // One identical cluster per configuration, so every configuration meets
  // the same upstream state (the mock's cost grows with what it stores) and
  // concurrent scenarios do not share a mock thread. (b)'s advertises
  // HAProxy's ports.
  std::unique_ptr<EmbeddedCluster> cluster[kConfigCount];
  ProxyProcess haproxy;
  ProxyProcess eg_off, eg_enforce;
  ProxyProcess splice_relay, copy_relay;
  std::string bootstrap[kConfigCount];
  pid_t pid[kConfigCount] = {-1, -1, -1, -1, -1, -1};
};

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

bool start_epochgate(const Options& o, const std::string& bootstrap, const std::string& mode,
                     const std::string& name, ProxyProcess& proc, std::string* out_bootstrap,
                     std::string* error, const std::string& extra_yaml = "") {
  const std::string cfg = o.out + "/" + name + ".yaml";
  write_file(cfg, "policy:\n  default_mode: \"" + mode + "\"\n" + o.epochgate_yaml + extra_yaml);
  std::vector<std::string> argv = {o.epochgate,           "--bootstrap", bootstrap,
                                   "--listen",            "127.0.0.1:0", "--broker-port-base",
                                   "0",                   "--advertise-host", "127.0.0.1",
                                   "--admin",             "127.0.0.1:0", "--config",
                                   cfg,                   "--log-level", "warn",
                                   "--ready-file",        "-"};
  int ready_ms = 20000;
  if (!o.epochgate_wrapper.empty() && mode == "enforce") {
    argv.insert(argv.begin(), o.epochgate_wrapper.begin(), o.epochgate_wrapper.end());
    ready_ms = 180000;  // valgrind starts slowly
  }
  if (!proc.start(argv, o.out + "/" + name + ".log", "epochgate ready", ready_ms, error))
    return false;
  *out_bootstrap = proc.ready_field("bootstrap");
  if (out_bootstrap->empty()) {
    *error = "epochgate ready line without bootstrap=: " + proc.ready_line();
    return false;
  }
  return true;
}

bool start_relay(const Options& o, Rig& rig, int c, bool copy, ProxyProcess& proc,
                 std::string* error) {
  std::vector<std::string> relay_argv = {o.splice_relay};
  if (copy) relay_argv.push_back("--copy");
  for (int port : rig.cluster[c]->ports()) relay_argv.push_back("127.0.0.1:" + std::to_string(port));
  const std::string log = o.out + (copy ? "/copy-relay.log" : "/splice-relay.log");
  if (!proc.start(relay_argv, log, "splice-relay ready", 10000, error)) return false;
  std::stringstream listen(proc.ready_field("listen"));
  int32_t broker = 1;
  for (std::string item; std::getline(listen, item, ','); ++broker) {
    rig.cluster[c]->advertise_port(broker, std::atoi(item.c_str() + item.rfind(':') + 1));
    if (broker == 1) rig.bootstrap[c] = item;
  }
  if (broker - 1 != static_cast<int32_t>(rig.cluster[c]->ports().size()) ||
      proc.ready_field("mode") != (copy ? "copy" : "splice")) {
    *error = "relay ready line does not list one port per broker and its mode: " + proc.ready_line();
    return false;
  }
  rig.pid[c] = proc.pid();
  return true;
}

bool start_rig(const Options& o, Rig& rig, std::string* error) {
  for (auto& cluster : rig.cluster) {
    cluster = EmbeddedCluster::create(3, "t", 16, error);
    if (!cluster) return false;
  }
  rig.bootstrap[kDirect] = rig.cluster[kDirect]->bootstrap();

  // HAProxy in TCP mode: one frontend per broker; the mock advertises them.
  std::string cfg =
      "global\n  maxconn 4000\n\ndefaults\n  mode tcp\n  timeout connect 5s\n"
      "  timeout client 1h\n  timeout server 1h\n";
  const auto& mock_ports = rig.cluster[kHaproxy]->ports();
  std::vector<int> front_ports;
  for (size_t i = 0; i < mock_ports.size(); ++i) {
    const int port = free_port();
    front_ports.push_back(port);
    cfg += "\nfrontend broker" + std::to_string(i + 1) + "\n  bind 127.0.0.1:" +
           std::to_string(port) + "\n  default_backend broker" + std::to_string(i + 1) +
           "\n\nbackend broker" + std::to_string(i + 1) + "\n  server b" + std::to_string(i + 1) +
           " 127.0.0.1:" + std::to_string(mock_ports[i]) + "\n";
    rig.cluster[kHaproxy]->advertise_port(static_cast<int32_t>(i + 1), port);
  }
  const std::string cfg_path = o.out + "/haproxy.cfg";
  write_file(cfg_path, cfg);
  if (!rig.haproxy.start({o.haproxy, "-f", cfg_path, "-db"}, o.out + "/haproxy.log", "", 0,
                         error))
    return false;
  for (int port : front_ports) {
    if (!wait_for_port(port, 10000)) {
      *error = "haproxy did not listen on " + std::to_string(port) + " (see haproxy.log)";
      return false;
    }
  }
  rig.bootstrap[kHaproxy] = "127.0.0.1:" + std::to_string(front_ports[0]);
  rig.pid[kHaproxy] = rig.haproxy.pid();

  const bool c_compares = !o.sweep_c_yaml.empty();
  if (c_compares) relabel_config(kEpochgateOff, "(c) epochgate enforce + --sweep-c-yaml");
  if (!start_epochgate(o, rig.cluster[kEpochgateOff]->bootstrap(), c_compares ? "enforce" : "off",
                       "epochgate-off", rig.eg_off, &rig.bootstrap[kEpochgateOff], error,
                       o.sweep_c_yaml))
    return false;
  rig.pid[kEpochgateOff] = rig.eg_off.pid();
  if (!start_epochgate(o, rig.cluster[kEpochgateEnforce]->bootstrap(), "enforce", "epochgate-enforce",
                       rig.eg_enforce, &rig.bootstrap[kEpochgateEnforce], error))
    return false;
  rig.pid[kEpochgateEnforce] = rig.eg_enforce.pid();

  // (e) and (f): one relay listener per broker, advertised by its own
  // cluster like HAProxy's; (f) is the same program copying (--copy).
  return start_relay(o, rig, kSpliceRelay, false, rig.splice_relay, error) &&
         start_relay(o, rig, kCopyRelay, true, rig.copy_relay, error);
}

// Round r visits the configurations in a rotated order, so slow drift of the
// shared machine does not always favour the same one.
std::vector<int> round_order(int round) {
  std::vector<int> order;
  for (int i = 0; i < kConfigCount; ++i) order.push_back((i + round) % kConfigCount);
  return order;
}

void host_and_port(const std::string& bootstrap, std::string* host, int* port) {
  const std::string first = bootstrap.substr(0, bootstrap.find(','));
  const auto colon = first.rfind(':');
  *host = first.substr(0, colon);
  *port = std::atoi(first.c_str() + colon + 1);
}

void run_produce_scenario(const Options& o, Rig& rig, BenchResults& r, const std::string& acks) {
  for (int round = 0; round < o.rounds; ++round) {
    for (int c : round_order(round)) {
      ProduceSpec spec;
      spec.bootstrap = rig.bootstrap[c];
      spec.acks = acks;
      spec.seconds = o.seconds;
      const double cpu0 = cpu_seconds_of(rig.pid[c]);
      ProduceResult pr = run_produce(spec);
      const double cpu1 = cpu_seconds_of(rig.pid[c]);
      ThroughputFigures& f = r.produce[c]["acks=" + acks];
      if (!pr.ok) f.errors.push_back(pr.error);
      f.msgs_per_sec.push_back(pr.msgs_per_sec());
      f.mib_per_sec.push_back(pr.mib_per_sec(spec.message_bytes));
      f.latency.merge(pr.latency);
      f.payload_bytes += static_cast<double>(pr.delivered) * spec.message_bytes;
      if (rig.pid[c] > 0) f.proxy_cpu_seconds += cpu1 - cpu0;
      log_line("produce acks=%s round %d %-20s %8.0f msg/s %7.1f MiB/s p99 %.1f ms cpu %.2f s %s",
               acks.c_str(), round + 1, config_label(c), pr.msgs_per_sec(),
               pr.mib_per_sec(spec.message_bytes), pr.latency.percentile(99) / 1000,
               rig.pid[c] > 0 ? cpu1 - cpu0 : 0.0, pr.error.c_str());
    }
  }
}

void run_consume_scenario(const Options& o, Rig& rig, BenchResults& r) {
  // Data to read: the mock keeps about 5 MiB per partition (5,000 messages
  // of 1 KiB); make sure every cluster holds at least 48,000.
  for (int c = 0; c < kConfigCount; ++c) {
    ProduceSpec fill;
    fill.bootstrap = rig.bootstrap[c];
    fill.seconds = 0.01;
    fill.warmup_messages = 48000;
    ProduceResult pr = run_produce(fill);
    if (!pr.ok) log_line("consume preload via %s: %s", config_label(c), pr.error.c_str());
  }
  for (int round = 0; round < o.rounds; ++round) {
    for (int c : round_order(round)) {
      // One pass over 40,000 messages (about 40 MB) takes tens of
      // milliseconds, below what the proxy's CPU clock (10 ms ticks) tells
      // apart: the consumer reads them again from the beginning for --seconds.
      ConsumeSpec spec;
      spec.bootstrap = rig.bootstrap[c];
      spec.max_messages = 40000;
      spec.repeat_for_seconds = o.seconds;
      spec.timeout_seconds = 30 + o.seconds;
      const double cpu0 = cpu_seconds_of(rig.pid[c]);
      ConsumeResult sum = run_consume(spec, nullptr, nullptr);
      const int passes = sum.passes;
      const double cpu1 = cpu_seconds_of(rig.pid[c]);
      ThroughputFigures& f = r.consume[c];
      if (!sum.ok) f.errors.push_back(sum.error);
      f.msgs_per_sec.push_back(sum.msgs_per_sec());
      f.mib_per_sec.push_back(sum.mib_per_sec());
      f.payload_bytes += static_cast<double>(sum.bytes);
      if (rig.pid[c] > 0) f.proxy_cpu_seconds += cpu1 - cpu0;
      log_line("consume round %d %-20s %8.0f msg/s %7.1f MiB/s %d passes %s", round + 1,
               config_label(c), sum.msgs_per_sec(), sum.mib_per_sec(), passes, sum.error.c_str());
    }
  }
}

// All configurations at once, each with its own producer and consumer
// at the same low rate: the machine is far from saturated, and a burst of
// noise on the shared machine lands on every configuration alike.
void run_latency_scenario(const Options& o, Rig& rig, BenchResults& r) {
  for (int round = 0; round < o.rounds; ++round) {
    // A fresh topic per round: the mock looks a fetch offset up by walking
    // the partition's stored batches, so small batches piling up from earlier
    // rounds would make each round slower than the last.
    const std::string topic = "lat" + std::to_string(round + 1);
    for (auto& cluster : rig.cluster) cluster->create_topic(topic, 16);
    std::atomic<bool> stop{false};
    std::atomic<bool> ready[kConfigCount];
    ConsumeResult cr[kConfigCount];
    ProduceResult pr[kConfigCount];
    std::vector<std::thread> consumers, producers;
    for (int c = 0; c < kConfigCount; ++c) {
      ready[c] = false;
      consumers.emplace_back([&, c] {
        ConsumeSpec cs;
        cs.bootstrap = rig.bootstrap[c];
        cs.topic = topic;
        cs.from_beginning = false;
        cs.timeout_seconds = 120;
        cs.fetch_wait_max_ms = 10;
        cs.measure_end_to_end = true;
        cr[c] = run_consume(cs, &stop, &ready[c]);
      });
    }
    for (int c = 0; c < kConfigCount; ++c) {
      while (!ready[c].load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // fetch sessions up
    for (int c = 0; c < kConfigCount; ++c) {
      producers.emplace_back([&, c] {
        ProduceSpec ps;
        ps.bootstrap = rig.bootstrap[c];
        ps.topic = topic;
        ps.acks = "1";
        ps.linger_ms = 0;
        ps.rate = o.latency_rate;
        ps.seconds = o.latency_seconds;
        ps.embed_send_time = true;
        pr[c] = run_produce(ps);
      });
    }
    for (auto& t : producers) t.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
    for (auto& t : consumers) t.join();
    for (int c = 0; c < kConfigCount; ++c) {
      ThroughputFigures& f = r.fixed_rate_produce[c];
      if (!pr[c].ok) f.errors.push_back(pr[c].error);
      if (!cr[c].ok) {
        std::string msg = "consumer: ";
        msg += cr[c].error;
        f.errors.push_back(msg);
      }
      f.msgs_per_sec.push_back(pr[c].msgs_per_sec());
      f.latency.merge(pr[c].latency);
      r.fixed_rate_e2e[c].merge(cr[c].end_to_end);
      log_line("fixed-rate round %d %-22s produce p50 %.0f p99 %.0f p99.9 %.0f us, e2e p50 %.1f ms "
               "(%zu msgs) %s",
               round + 1, config_label(c), pr[c].latency.percentile(50),
               pr[c].latency.percentile(99), pr[c].latency.percentile(99.9),
               cr[c].end_to_end.percentile(50) / 1000, cr[c].end_to_end.count(),
               pr[c].error.c_str());
    }
  }
}

// Cumulative bucket counts (le -> count) of one histogram on epochgate's
// /metrics, summed over label sets.
std::map<double, double> scrape_histogram(const ProxyProcess& proc, const std::string& name) {
  std::map<double, double> buckets;
  std::string host;
  int port = 0;
  host_and_port(proc.ready_field("admin"), &host, &port);
  std::istringstream text(http_get(host, port, "/metrics"));
  const std::string prefix = name + "_bucket{";
  for (std::string line; std::getline(text, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const auto le = line.find("le=\"");
    const auto close = line.find('}');
    if (le == std::string::npos || close == std::string::npos) continue;
    const std::string bound = line.substr(le + 4, line.find('"', le + 4) - le - 4);
    const double key = bound == "+Inf" ? 1e30 : std::atof(bound.c_str());
    buckets[key] += std::atof(line.c_str() + close + 1);
  }
  return buckets;
}

void run_ping_pong_scenario(const Options& o, Rig& rig, BenchResults& r) {
  // epochgate's own account of the time it held each request and response.
  const ProxyProcess* egs[2] = {&rig.eg_off, &rig.eg_enforce};
  std::map<double, double> before[2];
  for (int i = 0; i < 2; ++i) before[i] = scrape_histogram(*egs[i], "epochgate_proxy_latency_seconds");
  for (int round = 0; round < o.rounds; ++round) {
    for (int kind = 0; kind < 2; ++kind) {
      PingPongFigures* figures = kind == 0 ? r.ping_api_versions : r.ping_metadata;
      LatencySamples samples[kConfigCount];
      std::vector<PingTarget> targets(kConfigCount);
      for (int c = 0; c < kConfigCount; ++c) {
        host_and_port(rig.bootstrap[c], &targets[c].host, &targets[c].port);
        targets[c].out = &samples[c];
      }
      ping_pong_interleaved(targets, kind == 0 ? ProbeRequest::kApiVersions
                                               : ProbeRequest::kMetadata,
                            "t", 200, o.ping_count);
      for (int c = 0; c < kConfigCount; ++c) {
        if (targets[c].failed) figures[c].errors.push_back("round trip failed");
        log_line("ping-pong %s round %d %-22s p50 %6.1f p99 %7.1f p99.9 %7.1f us",
                 kind == 0 ? "ApiVersions" : "Metadata", round + 1, config_label(c),
                 samples[c].percentile(50), samples[c].percentile(99),
                 samples[c].percentile(99.9));
        figures[c].round_p50.push_back(samples[c].percentile(50));
        figures[c].round_p99.push_back(samples[c].percentile(99));
        figures[c].rtt.merge(samples[c]);
      }
    }
  }
  for (int i = 0; i < 2; ++i) {
    auto after = scrape_histogram(*egs[i], "epochgate_proxy_latency_seconds");
    auto& out = r.proxy_held[i == 0 ? kEpochgateOff : kEpochgateEnforce];
    for (const auto& [le, count] : after) out.push_back({le, count - before[i][le]});
  }
}

void run_idle_scenario(const Options& o, Rig& rig, BenchResults& r, IdleFigures* figures) {
  r.idle_connections_target = o.idle_connections;
  for (int c : {kHaproxy, kEpochgateOff, kEpochgateEnforce, kSpliceRelay, kCopyRelay}) {
    std::string host;
    int port = 0;
    host_and_port(rig.bootstrap[c], &host, &port);
    IdleFigures& f = figures[c];
    f.rss_before_kib = rss_kib_of(rig.pid[c]);
    {
      std::vector<WireClient> conns;
      conns.reserve(static_cast<size_t>(o.idle_connections));
      f.connections = open_idle_connections(host, port, o.idle_connections, conns);
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      f.rss_at_kib = rss_kib_of(rig.pid[c]);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    f.rss_after_close_kib = rss_kib_of(rig.pid[c]);
    f.measured = true;
    log_line("idle %-20s %d connections: RSS %ld -> %ld KiB (after close %ld KiB)",
             config_label(c), f.connections, f.rss_before_kib, f.rss_at_kib,
             f.rss_after_close_kib);
  }
}

void run_leader_scenario(const Options& o, BenchResults& r) {
  std::string error;
  // A cluster that sends no hints: Produce capped at v9, Fetch at v15 (Kafka
  // before 3.7), and one that does (the mock's full range) as a reference.
  auto no_hints = EmbeddedCluster::create(3, "m", 16, &error);
  auto hints = EmbeddedCluster::create(3, "m", 16, &error);
  if (!no_hints || !hints || !no_hints->cap_api(0, 0, 9) || !no_hints->cap_api(1, 0, 15)) {
    r.notes.push_back("leader move: cluster set-up failed: " + error);
    return;
  }
  ProxyProcess eg;
  std::string eg_bootstrap;
  if (!start_epochgate(o, no_hints->bootstrap(), "enforce", "epochgate-leader", eg,
                       &eg_bootstrap, &error)) {
    r.notes.push_back("leader move: " + error);
    return;
  }
  LeaderTable t_no_hints, t_hints;
  if (!query_leaders(no_hints->bootstrap(), "m", &t_no_hints, &error) ||
      !query_leaders(hints->bootstrap(), "m", &t_hints, &error)) {
    r.notes.push_back("leader move: " + error);
    return;
  }
  struct Case {
    const char* label;
    std::string bootstrap;
    EmbeddedCluster* cluster;
    LeaderTable* table;
  };
  const Case cases[3] = {
      {"direct, cluster without hints (Produce <= v9)", no_hints->bootstrap(), no_hints.get(),
       &t_no_hints},
      {"epochgate enforcing, same cluster (hints from epochgate)", eg_bootstrap, no_hints.get(),
       &t_no_hints},
      {"direct, cluster with KIP-951 hints (reference)", hints->bootstrap(), hints.get(),
       &t_hints}};
  // The client's default retry backoff (100 ms) first; then 10 ms, where the
  // Metadata round trip a hint saves is a larger share of the recovery.
  const int backoffs[2] = {0, 10};
  const int rounds = 2;
  for (int v = 0; v < 2; ++v) {
    const size_t base = r.leader_moves.size();
    for (const Case& c : cases) {
      LeaderMoveFigures f;
      f.label = c.label;
      f.client = backoffs[v] == 0 ? "retry.backoff.ms=100 (default)"
                                  : "retry.backoff.ms=" + std::to_string(backoffs[v]);
      r.leader_moves.push_back(f);
    }
    for (int round = 0; round < rounds; ++round) {
      for (int i = 0; i < 3; ++i) {
        const int k = (i + round) % 3;
        LeaderMoveSpec spec;
        spec.bootstrap = cases[k].bootstrap;
        spec.cluster = cases[k].cluster;
        spec.leaders = cases[k].table;
        spec.retry_backoff_ms = backoffs[v];
        LeaderMoveResult res = run_leader_moves(spec);
        LeaderMoveFigures& f = r.leader_moves[base + static_cast<size_t>(k)];
        f.moves.insert(f.moves.end(), res.moves.begin(), res.moves.end());
        f.window_all.merge(res.window_all);
        f.window_moved.merge(res.window_moved);
        f.failed += res.failed;
        if (!res.ok) f.errors.push_back(res.error);
        std::string rec;
        for (const auto& m : res.moves) {
          char buf[64];
          std::snprintf(buf, sizeof buf, " p%d %d->%d %.0f ms;", m.partition, m.from, m.to,
                        m.recovery_ms);
          rec += buf;
        }
        log_line("leader move %s round %d %s:%s p99(moved) %.1f ms %s", f.client.c_str(),
                 round + 1, f.label.c_str(), rec.c_str(), res.window_moved.percentile(99) / 1000,
                 res.error.c_str());
      }
    }
  }
  // What epochgate did during the moves, from its own metrics.
  std::string admin_host;
  int admin_port = 0;
  host_and_port(eg.ready_field("admin"), &admin_host, &admin_port);
  std::istringstream metrics(http_get(admin_host, admin_port, "/metrics"));
  for (std::string line; std::getline(metrics, line);) {
    if (line.empty() || line[0] == '#') continue;
    for (const char* name : {"epochgate_hints_total", "epochgate_fenced_partitions_total",
                             "epochgate_metadata_refreshes_total"}) {
      if (line.rfind(name, 0) == 0) r.leader_metrics.push_back(line);
    }
  }
}

std::vector<MicroRow> run_micro(const std::string& bin, std::string* error) {
  std::vector<MicroRow> rows;
  if (bin.empty()) return rows;
  const std::string out =
      run_capture(bin + " --benchmark_format=csv --benchmark_min_time=0.3 2>/dev/null");
  std::istringstream in(out);
  bool header = false;
  std::vector<std::string> columns;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("name,", 0) == 0) {
      header = true;
      std::stringstream names(line);
      for (std::string col; std::getline(names, col, ',');) {
        col.erase(std::remove(col.begin(), col.end(), '"'), col.end());  // user counters are quoted
        columns.push_back(col);
      }
      continue;
    }
    if (!header || line.empty()) continue;
    // name,iterations,real_time,cpu_time,time_unit,bytes_per_second,items_per_second,label,...
    std::vector<std::string> f;
    std::string cur;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') quoted = !quoted;
      else if (ch == ',' && !quoted) f.push_back(cur), cur.clear();
      else cur += ch;
    }
    f.push_back(cur);
    if (f.size() < 8) continue;
    MicroRow row;
    row.name = f[0];
    double t = std::atof(f[2].c_str());
    if (f[4] == "us") t *= 1e3;
    else if (f[4] == "ms") t *= 1e6;
    else if (f[4] == "s") t *= 1e9;
    row.real_ns = t;
    row.bytes_per_second = std::atof(f[5].c_str());
    row.items_per_second = std::atof(f[6].c_str());
    row.label = f[7];
    // User counters follow the ten standard columns (name .. error_message).
    for (size_t i = 10; i < f.size() && i < columns.size(); ++i) {
      if (!f[i].empty()) row.counters[columns[i]] = std::atof(f[i].c_str());
    }
    rows.push_back(row);
  }
  if (rows.empty()) *error += "no results from " + bin + "; ";
  return rows;
}

void run_soak(const Options& o, Rig& rig, BenchResults& r) {
  r.soak_minutes = o.soak_minutes;
  const pid_t pid = rig.pid[kEpochgateEnforce];
  std::string host;
  int port = 0;
  host_and_port(rig.bootstrap[kEpochgateEnforce], &host, &port);
  std::atomic<bool> done{false};
  std::atomic<long long> delivered{0};
  ProduceResult pr;
  // Steady produce plus connection churn (50 connections opened and closed
  // every 10 s): a leak per request or per connection shows as growth.
  std::thread producer([&] {
    ProduceSpec ps;
    ps.bootstrap = rig.bootstrap[kEpochgateEnforce];
    ps.rate = 5000;
    ps.seconds = o.soak_minutes * 60;
    ps.on_delivery = [&](const DeliveryEvent&) { ++delivered; };
    pr = run_produce(ps);
    done = true;
  });
  const auto start = std::chrono::steady_clock::now();
  auto next_sample = start;
  while (!done.load()) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_sample) {
      SoakSample s;
      s.minute = std::chrono::duration<double>(now - start).count() / 60.0;
      s.rss_kib = rss_kib_of(pid);
      s.delivered = delivered.load();
      r.soak.push_back(s);
      log_line("soak %.1f min: RSS %ld KiB, %lld delivered", s.minute, s.rss_kib, s.delivered);
      std::vector<WireClient> churn;
      open_idle_connections(host, port, 50, churn);
      next_sample += std::chrono::seconds(10);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  producer.join();
  if (!pr.ok) r.soak_error = pr.error;
  SoakSample last;
  last.minute = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60;
  last.rss_kib = rss_kib_of(pid);
  last.delivered = delivered.load();
  r.soak.push_back(last);
}

// Runs a workload through epochgate enforcing (or --profile-config's
// configuration) while `cmd` (with {pid} replaced by that proxy's pid)
// profiles it; the profiler gets SIGINT when the load ends.
// --profile-small-frames with consume: the fill's batch.size and the
// consumer's max.partition.fetch.bytes (fetch.max.bytes is four times it).
constexpr int kSmallFetchPartitionBytes = 4096;

int run_profile(const Options& o, Rig& rig) {
  const int c = o.profile_config;
  long long fetch_records = 40000;
  if (o.profile_workload == "consume") {
    ProduceSpec fill;  // straight into the cluster: only the reads are profiled
    fill.bootstrap = rig.cluster[c]->bootstrap();
    fill.seconds = 0.01;
    fill.warmup_messages = 48000;
    if (o.profile_record_bytes > 0) {  // the sweep's Fetch row at that size
      fill = sweep_fetch_fill_spec(SweepOptions{}, rig.cluster[c]->bootstrap(), "t",
                                   o.profile_record_bytes);
      fetch_records = fill.warmup_messages;
    }
    if (o.profile_small_frames) {
      // Batches of a few records, so a Fetch response can be small.
      fill.linger_ms = 0;
      fill.batch_bytes = kSmallFetchPartitionBytes;
    }
    run_produce(fill);
  }
  std::string cmd = o.profile_cmd;
  const std::string pid = std::to_string(rig.pid[c]);
  for (size_t at; (at = cmd.find("{pid}")) != std::string::npos;) cmd.replace(at, 5, pid);
  ProxyProcess profiler;
  std::string error;
  if (!profiler.start({"/bin/sh", "-c", "exec " + cmd}, o.out + "/profiler.log", "", 0, &error)) {
    log_line("profiler: %s", error.c_str());
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const double cpu0 = cpu_seconds_of(rig.pid[c]);
  double bytes = 0, seconds = 0;
  std::string err;
  if (o.profile_workload == "consume") {
    ConsumeSpec cs;
    cs.bootstrap = rig.bootstrap[c];
    cs.max_messages = fetch_records;
    cs.repeat_for_seconds = o.profile_seconds;
    cs.timeout_seconds = 30 + o.profile_seconds;
    cs.wire_shape = true;
    if (o.profile_small_frames) {
      // Responses of about 10-20 KB: a few small batches each.
      cs.partition_fetch_bytes = kSmallFetchPartitionBytes;
      cs.fetch_max_bytes = 4 * kSmallFetchPartitionBytes;
    }
    ConsumeResult cr = run_consume(cs, nullptr, nullptr);
    bytes = static_cast<double>(cr.bytes);
    seconds = cr.seconds;
    if (!cr.ok) err = cr.error;
    std::printf("shape: %lld Fetch responses, %.0f response bytes (%.0f per response), "
                "%lld records of %d B\n",
                cr.shape.requests, cr.shape.bytes, cr.shape.bytes_per_request(), cr.messages,
                o.profile_record_bytes > 0 ? o.profile_record_bytes : ProduceSpec{}.message_bytes);
  } else {
    ProduceSpec ps;
    if (o.profile_record_bytes > 0) {
      ps = sweep_produce_spec(SweepOptions{}, rig.bootstrap[c], "t", o.profile_record_bytes,
                              o.profile_small_frames);
    } else {
      ps.bootstrap = rig.bootstrap[c];
      ps.wire_shape = true;
    }
    ps.seconds = o.profile_seconds;
    if (o.profile_workload == "produce-all") ps.acks = "all";
    ProduceResult pr = run_produce(ps);
    bytes = static_cast<double>(pr.delivered) * ps.message_bytes;
    seconds = pr.seconds;
    err = pr.error;
    std::printf("shape: %lld Produce requests, %.0f request bytes (%.0f per request), %.1f "
                "partitions per request, %.1f records per batch, %lld records of %d B\n",
                pr.shape.requests, pr.shape.bytes, pr.shape.bytes_per_request(),
                pr.shape.batches_per_request(), pr.shape.records_per_batch(), pr.delivered,
                ps.message_bytes);
  }
  const double cpu1 = cpu_seconds_of(rig.pid[c]);
  kill(profiler.pid(), SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));
  profiler.stop();
  const double gb = bytes / 1e9;
  std::printf("%s through %s: %.2f GB payload in %.1f s (%.1f MiB/s), proxy "
              "CPU %.2f s (%.2f s/GB)%s%s\n",
              o.profile_workload.c_str(), config_label(c), gb, seconds,
              seconds > 0 ? bytes / seconds / (1024.0 * 1024.0) : 0.0, cpu1 - cpu0,
              gb > 0 ? (cpu1 - cpu0) / gb : 0.0, err.empty() ? "" : "; error: ", err.c_str());
  return err.empty() ? 0 : 1;
}

std::string machine_load() { return first_line(read_first_line("/proc/loadavg")); }

}  // namespace
}  // namespace epochgate::bench

int main(int argc, char** argv) {
  using namespace epochgate::bench;
  if (argc == 4 && std::string(argv[1]) == "--serve-mock")
    return serve_mock_main(std::atoi(argv[2]), std::atoi(argv[3]));
  Options o;
  if (!parse(argc, argv, &o)) {
    usage();
    return 2;
  }
  if (o.splice_relay.empty()) {
    const std::string self = argv[0];
    const auto slash = self.rfind('/');
    o.splice_relay = (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) +
                     "/splice_relay";
  }
  signal(SIGPIPE, SIG_IGN);
  // 1,000 client sockets here plus the mock's accepted ones.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  std::system(("mkdir -p '" + o.out + "'").c_str());
  const auto wall0 = std::chrono::steady_clock::now();

  auto want = [&](const char* name) { return o.only.empty() || o.only.count(name) > 0; };
  BenchResults r;
  r.command = o.command;
  r.source_rev = o.source_rev;
  r.rounds = o.rounds;
  r.seconds = o.seconds;
  r.latency_rate = o.latency_rate;
  r.latency_seconds = o.latency_seconds;
  r.ping_count = o.ping_count;
  r.load_before = machine_load();
  {
    char buf[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    r.started_at = buf;
  }
  r.versions.push_back(first_line(run_capture("'" + o.epochgate + "' --version 2>&1")));
  r.versions.push_back(first_line(run_capture("'" + o.haproxy + "' -v 2>&1")));
  r.versions.push_back(std::string("librdkafka ") + rd_kafka_version_str() +
                       " (client and mock cluster)");

  Rig rig;
  std::string error;
  const bool needs_rig = !o.profile_cmd.empty() || want("produce") || want("consume") ||
                         want("sweep") ||
                         want("latency") || want("pingpong") || want("idle") ||
                         (o.soak_minutes > 0 && want("soak"));
  if (needs_rig && !start_rig(o, rig, &error)) {
    log_line("set-up failed: %s", error.c_str());
    return 1;
  }
  if (!o.profile_cmd.empty()) return run_profile(o, rig);
  log_line("bootstraps: direct %s, haproxy %s, epochgate off %s, epochgate enforce %s, "
           "splice relay %s",
           rig.bootstrap[0].c_str(), rig.bootstrap[1].c_str(), rig.bootstrap[2].c_str(),
           rig.bootstrap[3].c_str(), rig.bootstrap[4].c_str());

  // Idle connections first on fresh processes (a clean per-connection
  // figure), and again after all the load (what a long-running proxy holds).
  if (want("idle")) run_idle_scenario(o, rig, r, r.idle);
  if (want("pingpong")) run_ping_pong_scenario(o, rig, r);
  if (want("produce")) {
    run_produce_scenario(o, rig, r, "1");
    run_produce_scenario(o, rig, r, "all");
  }
  if (want("consume")) run_consume_scenario(o, rig, r);
  if (want("sweep")) {
    SweepOptions so;
    so.rounds = std::max(1, std::min(o.sweep_rounds, o.rounds));
    so.seconds = o.seconds;
    if (!o.sweep_sizes.empty()) so.sizes = o.sweep_sizes;
    so.workloads = o.sweep_workloads;
    so.log = [](const std::string& line) { log_line("%s", line.c_str()); };
    // (c) is left out unless it runs a compared setting: the sweep's
    // question is epochgate with fencing on.
    std::vector<SweepTarget> targets;
    for (int c : {kDirect, kHaproxy, kEpochgateEnforce, kSpliceRelay, kCopyRelay})
      targets.push_back({c, rig.bootstrap[c], rig.pid[c], rig.cluster[c].get()});
    if (!o.sweep_c_yaml.empty())  // the other side of the before/after
      targets.push_back({kEpochgateOff, rig.bootstrap[kEpochgateOff], rig.pid[kEpochgateOff],
                         rig.cluster[kEpochgateOff].get()});
    r.sweep_section = run_size_sweep(so, targets);
  }
  if (want("latency")) run_latency_scenario(o, rig, r);
  if (want("idle")) run_idle_scenario(o, rig, r, r.idle_after_load);
  if (want("leader")) run_leader_scenario(o, r);
  if (want("micro")) {
    r.codec_micro = run_micro(o.codec_bench, &r.micro_error);
    r.policy_micro = run_micro(o.policy_bench, &r.micro_error);
  }
  if (o.soak_minutes > 0 && want("soak")) run_soak(o, rig, r);
  if (o.scale || o.only.count("scale") > 0) {
    o.scale_ctx.epochgate = o.epochgate;
    o.scale_ctx.self = argv[0];
    o.scale_ctx.out = o.out;
    const auto s0 = std::chrono::steady_clock::now();
    if (o.scale_ctx.topics > 0)  // --scale-topics 0: only the idle connections
      r.scale_sections = run_scale_metadata_and_sidecars(o.scale_ctx);
    r.scale_sections += run_scale_idle(o.scale_ctx);
    r.scale_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
    log_line("scale scenarios took %.0f s", r.scale_seconds);
  }
  r.load_after = machine_load();
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  if (!write_report(r, o.out)) {
    log_line("cannot write the report into %s", o.out.c_str());
    return 1;
  }
  log_line("report written to %s/RESULTS.md", o.out.c_str());
  return 0;
}
