// bench/kafka_load: the scale scenarios (see scale.h). Every figure in the
// sections comes from a measurement in this run; computed figures (the
// 1,000-sidecar fleet) say what they are computed from.
#include "scale.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "embedded_cluster.h"
#include "proxy_process.h"
#include "wire_client.h"

namespace epochgate::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void log_scale(const std::string& line) { std::fprintf(stderr, "[scale] %s\n", line.c_str()); }

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

std::string topic_name(int t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "scale-%03d", t);
  return buf;
}

bool start_eg(const ScaleContext& ctx, const std::string& bootstrap, const std::string& name,
              const std::string& extra_yaml, const std::vector<std::string>& extra_args,
              const std::string& log_level, ProxyProcess& proc, std::string* error) {
  const std::string cfg = ctx.out + "/" + name + ".yaml";
  std::ofstream(cfg) << "policy:\n  default_mode: \"enforce\"\n" << extra_yaml;
  std::vector<std::string> argv = {ctx.epochgate, "--bootstrap", bootstrap, "--listen",
                                   "127.0.0.1:0", "--broker-port-base", "0", "--advertise-host",
                                   "127.0.0.1", "--admin", "127.0.0.1:0", "--config", cfg,
                                   "--log-level", log_level, "--ready-file", "-"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  return proc.start(argv, ctx.out + "/" + name + ".log", "epochgate ready", 60000, error);
}

void split_host_port(const std::string& hp, std::string* host, int* port) {
  const std::string first = hp.substr(0, hp.find(','));
  *host = first.substr(0, first.rfind(':'));
  *port = std::atoi(first.c_str() + first.rfind(':') + 1);
}

/// Sum of the samples of `name` (any labels containing `label_part`) on /metrics.
double metric(const ProxyProcess& p, const std::string& name, const std::string& label_part = "") {
  std::string host;
  int port = 0;
  split_host_port(p.ready_field("admin"), &host, &port);
  std::istringstream text(http_get(host, port, "/metrics"));
  double sum = 0;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') continue;
    if (!label_part.empty() && line.find(label_part) == std::string::npos) continue;
    sum += std::atof(line.c_str() + line.rfind(' ') + 1);
  }
  return sum;
}

long fd_count(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  long n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * (v.size() - 1) + 0.5));
  return v[i];
}

/// One full Metadata v12 round trip; ms, or -1 on failure.
double full_metadata_ms(WireClient& c, size_t* bytes) {
  const auto t0 = Clock::now();
  if (!c.send_metadata_all_v12() || !c.read_response()) return -1;
  *bytes = c.last_response_bytes();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// Bytes of the refresher's Metadata request for these topic names (v12 and
/// up: request header v2 with client id "epochgate-refresher", each topic as
/// topic id + compact name + empty tagged fields), size prefix included.
size_t refresher_request_bytes(int topics) {
  size_t body = 1 /* compact array length (varint, < 128 topics) */ + 3 /* bools, tags */;
  for (int t = 0; t < topics; ++t) body += 16 + 1 + topic_name(t).size() + 1;
  if (topics >= 127) body += 1;  // two-byte varint
  return 4 + 2 + 2 + 4 + 2 + std::string("epochgate-refresher").size() + 1 + body;
}

}  // namespace

std::string run_scale_metadata_and_sidecars(const ScaleContext& ctx) {
  std::ostringstream md;
  std::string error;
  const long total = static_cast<long>(ctx.topics) * ctx.partitions;
  md << "## Scale: " << total << " partitions (" << ctx.topics << " topics x " << ctx.partitions
     << ")\n\n";
  const auto t_create = Clock::now();
  auto cluster = EmbeddedCluster::create(3, topic_name(0), ctx.partitions, &error);
  if (!cluster) return md.str() + "Not run: " + error + "\n\n";

  // The refresher's startup request names no topics (brokers only) and its
  // periodic ones name the topics learned from traffic, so the view grows
  // from a client's full Metadata: RSS before and after that one response.
  ProxyProcess eg;
  if (!start_eg(ctx, cluster->bootstrap(), "scale-eg", "", {}, "warn", eg, &error))
    return md.str() + "Not run: " + error + "\n\n";
  for (int t = 1; t < ctx.topics; ++t) cluster->create_topic(topic_name(t), ctx.partitions);
  const double create_s = std::chrono::duration<double>(Clock::now() - t_create).count();
  sleep_ms(1500);
  const double view_before = metric(eg, "epochgate_view_partitions");
  const long rss_before = rss_kib_of(eg.pid());

  std::string dhost, ehost;
  int dport = 0, eport = 0;
  split_host_port(cluster->bootstrap(), &dhost, &dport);
  split_host_port(eg.ready_field("bootstrap"), &ehost, &eport);
  WireClient direct, through;
  if (!direct.connect(dhost, dport) || !through.connect(ehost, eport))
    return md.str() + "Not run: cannot connect\n\n";
  size_t direct_bytes = 0, eg_bytes = 0;
  const double first_eg_ms = full_metadata_ms(through, &eg_bytes);  // learns the rest
  sleep_ms(1500);
  const long rss_after = rss_kib_of(eg.pid());
  const double view_after = metric(eg, "epochgate_view_partitions");

  // Interleaved round trips, so machine noise falls on both paths alike.
  std::vector<double> d_ms, e_ms;
  const double cpu0 = cpu_seconds_of(eg.pid());
  for (int i = 0; i < ctx.metadata_round_trips + 2; ++i) {
    const double d = full_metadata_ms(direct, &direct_bytes);
    const double e = full_metadata_ms(through, &eg_bytes);
    if (d < 0 || e < 0) return md.str() + "Not run: a full Metadata round trip failed\n\n";
    if (i >= 2) d_ms.push_back(d), e_ms.push_back(e);
  }
  const double eg_cpu_per_md =
      (cpu_seconds_of(eg.pid()) - cpu0) / (ctx.metadata_round_trips + 2) * 1e3;
  log_scale("full metadata: direct p50 " + fmt("%.1f", percentile(d_ms, 50)) + " ms, epochgate " +
            fmt("%.1f", percentile(e_ms, 50)) + " ms, " + std::to_string(direct_bytes) + " bytes");
  const double d50 = percentile(d_ms, 50), e50 = percentile(e_ms, 50);
  const double d90 = percentile(d_ms, 90), e90 = percentile(e_ms, 90);
  const double added50 = e50 - d50;
  const double per_partition =
      view_after > view_before ? (rss_after - rss_before) * 1024.0 / (view_after - view_before) : -1;

  md << "Mock cluster of 3 brokers, " << ctx.topics << " topics of " << ctx.partitions
     << " partitions, replication 3 (created in " << fmt("%.1f", create_s)
     << " s). A raw client sends Metadata v12 for all topics (null topic array, as librdkafka "
        "asks) on one connection direct and one through epochgate enforcing, alternating, "
     << ctx.metadata_round_trips
     << " measured round trips each after 2 warm-up. Through epochgate the response is "
        "decoded, learned into the view and re-encoded with rewritten broker addresses.\n\n";
  md << "| Figure | direct | through epochgate | added | added / direct | target |\n"
        "|---|---|---|---|---|---|\n";
  md << "| full Metadata round trip p50 (ms) | " << fmt("%.1f", d50) << " | " << fmt("%.1f", e50)
     << " | " << fmt("%+.1f", added50) << " | " << fmt("%.2f", d50 > 0 ? added50 / d50 : 0)
     << " | <= 2.00: " << (d50 > 0 && added50 / d50 <= 2 ? "**met**" : "**missed**") << " |\n";
  md << "| full Metadata round trip p90 (ms) | " << fmt("%.1f", d90) << " | " << fmt("%.1f", e90)
     << " | " << fmt("%+.1f", e90 - d90) << " | " << fmt("%.2f", d90 > 0 ? (e90 - d90) / d90 : 0)
     << " | |\n";
  md << "| response size (bytes) | " << direct_bytes << " | " << eg_bytes << " | | | |\n";
  md << "| epochgate CPU per full Metadata (ms) | | " << fmt("%.1f", eg_cpu_per_md) << " | | | |\n";
  md << "\nThe first response through epochgate (which grew the view from "
     << fmt("%.0f", view_before) << " to " << fmt("%.0f", view_after) << " partitions) took "
     << fmt("%.1f", first_eg_ms) << " ms.\n\n";
  md << "| View memory | figure | target |\n|---|---|---|\n";
  md << "| epochgate RSS before / after learning (MiB) | " << fmt("%.1f", rss_before / 1024.0)
     << " / " << fmt("%.1f", rss_after / 1024.0) << " | |\n";
  md << "| RSS growth per partition learned (bytes; an upper bound: it includes the "
        "decode and encode buffers of the " << direct_bytes / 1000000.0 << " MB response that the "
        "allocator keeps) | "
     << fmt("%.0f", per_partition) << " | (the view alone: the allocator's count below) |\n\n";
  md << "The allocator's own count of the view (no decode buffers, no RSS rounding) is "
        "`policy_bench`'s `BM_ViewMemory100000` (bytes_per_partition, in the targets and "
        "microbenchmark tables).\n\n";

  // Refresher cost: a second epochgate that refreshes every 2 s, so a short
  // window holds several periodic refreshes of the whole view (learned from
  // one client's full Metadata, as above).
  {
    ProxyProcess fast;
    if (start_eg(ctx, cluster->bootstrap(), "scale-refresher",
                 "refresher:\n  interval_ms: 2000\n", {}, "warn", fast, &error)) {
      std::string fh;
      int fp = 0;
      split_host_port(fast.ready_field("bootstrap"), &fh, &fp);
      WireClient teach;
      size_t ignored = 0;
      if (teach.connect(fh, fp)) full_metadata_ms(teach, &ignored);
      for (int i = 0; i < 100 && metric(fast, "epochgate_view_partitions") < total; ++i)
        sleep_ms(200);
      sleep_ms(1000);
      const double c0 = cpu_seconds_of(fast.pid());
      const double p0 = metric(fast, "epochgate_metadata_refreshes_total", "periodic");
      const auto w0 = Clock::now();
      sleep_ms(10000);
      const double c1 = cpu_seconds_of(fast.pid());
      const double p1 = metric(fast, "epochgate_metadata_refreshes_total", "periodic");
      const double window = std::chrono::duration<double>(Clock::now() - w0).count();
      const double refreshes = p1 - p0;
      const double per = refreshes > 0 ? (c1 - c0) / refreshes : -1;
      md << "Refresher cost: an epochgate with `refresher.interval_ms: 2000` holding the whole "
            "view (" << fmt("%.0f", metric(fast, "epochgate_view_partitions"))
         << " partitions, RSS " << fmt("%.1f", rss_kib_of(fast.pid()) / 1024.0)
         << " MiB) did " << fmt("%.0f", refreshes)
         << " periodic refreshes in " << fmt("%.1f", window) << " s using "
         << fmt("%.2f", c1 - c0) << " CPU s: **" << fmt("%.1f", per * 1e3)
         << " ms CPU per refresh** of " << ctx.topics << " topics (request "
         << refresher_request_bytes(ctx.topics) << " bytes, response about " << direct_bytes
         << " bytes). At the default `refresher.interval_ms` (30000) that is "
         << fmt("%.2f", per > 0 ? per / 30 * 100 : 0) << "% of one core, per epochgate.\n\n";
    } else {
      md << "Refresher cost: not measured (" << error << ")\n\n";
    }
  }

  // The fleet: N sidecar epochgates (one worker each, default settings) on
  // the same cluster, each used by an app that asked for one topic; the mock
  // logs every Metadata request it gets.
  md << "## Scale: a fleet of sidecars\n\n";
  {
    size_t one_topic_bytes = 0;
    {
      WireClient c;
      if (c.connect(dhost, dport) && c.send_metadata_v12({topic_name(0)}) && c.read_response())
        one_topic_bytes = c.last_response_bytes();
    }
    cluster->start_request_tracking();
    std::vector<std::unique_ptr<ProxyProcess>> fleet;
    const auto f0 = Clock::now();
    for (int i = 0; i < ctx.sidecars; ++i) {
      auto p = std::make_unique<ProxyProcess>();
      if (!start_eg(ctx, cluster->bootstrap(), "sidecar-" + std::to_string(i), "",
                    {"--workers", "1"}, "warn", *p, &error)) {
        md << "Fleet stopped at " << i << " sidecars: " << error << "\n\n";
        break;
      }
      std::string h;
      int port = 0;
      split_host_port(p->ready_field("bootstrap"), &h, &port);
      WireClient app;  // the app's own Metadata for its topic, through its sidecar
      if (app.connect(h, port)) app.send_metadata_v12({topic_name(0)}) && app.read_response();
      fleet.push_back(std::move(p));
    }
    const double started_s = std::chrono::duration<double>(Clock::now() - f0).count();
    const int n = static_cast<int>(fleet.size());
    const double settle = 3;
    sleep_ms(static_cast<int>(settle * 1000));
    const size_t at_start = cluster->request_times_us(3).size();
    sleep_ms(static_cast<int>(ctx.sidecar_window_s * 1000));
    std::vector<int64_t> times = cluster->request_times_us(3);
    long fleet_rss = 0;
    for (auto& p : fleet) fleet_rss += rss_kib_of(p->pid());
    fleet.clear();
    const size_t periodic = times.size() - at_start;
    // Peak: the most Metadata requests in any one second of the log.
    std::sort(times.begin(), times.end());
    size_t peak = 0;
    for (size_t i = 0, j = 0; i < times.size(); ++i) {
      while (times[i] - times[j] >= 1000000) ++j;
      peak = std::max(peak, i - j + 1);
    }
    const double per_sidecar_rate = n > 0 ? periodic / ctx.sidecar_window_s / n : 0;
    const double one_req = refresher_request_bytes(1);
    const double all_req = refresher_request_bytes(ctx.topics);
    const double one = one_req + one_topic_bytes, all = all_req + direct_bytes;
    const double rate_1000 = 1000 / 30.0;
    md << n << " epochgate processes (`--workers 1`, default refresher settings: every 30 s a "
          "Metadata request for every topic in the view, i.e. every topic its clients' traffic "
          "named; the startup request names none), started one after another in "
       << fmt("%.1f", started_s) << " s against the " << total
       << "-partition cluster; each is used by an app that asks for one topic (`" << topic_name(0)
       << "`, 1,000 partitions) through it. The mock logged every Metadata request "
          "(`rd_kafka_mock_start_request_tracking`); watched for "
       << fmt("%.0f", ctx.sidecar_window_s) << " s after a " << fmt("%.0f", settle)
       << " s settle. Fleet RSS at the end " << fmt("%.0f", fleet_rss / 1024.0) << " MiB ("
       << fmt("%.1f", n > 0 ? fleet_rss / 1024.0 / n : 0) << " MiB per sidecar). Request sizes "
          "are computed from the encoding (v12, header v2); response sizes are measured on the "
          "wire.\n\n";
    md << "| Figure | measured (" << n << " sidecars) | 1,000 sidecars, app uses 1 topic | "
          "1,000 sidecars, a client asked for all topics in the last 5 min (topic_idle_ms) "
          "|\n|---|---|---|---|\n";
    md << "| Metadata requests at the cluster in the log (startup, app, periodic) | "
       << times.size() << " | | |\n";
    md << "| periodic refreshes per sidecar per second | " << fmt("%.4f", per_sidecar_rate)
       << " (1/30 = 0.0333) | " << fmt("%.1f", rate_1000) << " requests/s | "
       << fmt("%.1f", rate_1000) << " requests/s |\n";
    md << "| bytes per refresh (request + response) | " << fmt("%.0f", one) << " | "
       << fmt("%.0f", one) << " | " << fmt("%.0f", all) << " |\n";
    md << "| Metadata bytes/s from the cluster (mean) | "
       << fmt("%.3f MB/s", per_sidecar_rate * n * one / 1e6) << " | "
       << fmt("%.1f MB/s", rate_1000 * one / 1e6) << " | "
       << fmt("%.1f MB/s", rate_1000 * all / 1e6) << " |\n";
    md << "| most Metadata requests in any one second | " << peak << " | up to 1,000 in the "
          "first round after a common start, then spread by the +-10% jitter | up to 1,000: "
       << fmt("%.2f GB", 1000 * all / 1e9) << " in that second |\n\n";
    md << "What the refresher does about it, and what a different design would save, for "
          "1,000 sidecars (computed from the sizes above):\n\n"
          "- **Topic-scoped refresh**: the refresher names the topics in the view, and the view "
          "keeps only topics a client request named in the last `refresher.topic_idle_ms` "
          "(default 5 min, like a Kafka producer's `metadata.max.idle.ms`). One `kcat -L` or "
          "admin tool through a sidecar makes it refresh all "
       << ctx.topics << " topics (" << fmt("%.0f", all) << " instead of " << fmt("%.0f", one)
       << " bytes: " << fmt("%.0fx", one > 0 ? all / one : 0)
       << ") for those 5 minutes plus at most one interval (about 10 refreshes), then the "
       << fmt("%.1f MB/s", rate_1000 * one / 1e6)
       << " figure again; before the view forgot idle topics, it lasted for ever. A client "
          "that asks for all topics every few minutes (a regex subscription, a monitoring "
          "poll) keeps them all in.\n"
          "- **Jitter**: each periodic refresh comes `interval_ms` +-10% (uniform) after the "
          "last full one, so the mean is unchanged and sidecars started together (a node or "
          "cluster restart) drift apart: the first round still brings up to 1,000 requests in "
          "one second, and each later round moves every sidecar by up to 3 s on its own, "
          "towards the mean of "
       << fmt("%.0f", rate_1000) << " per second.\n"
          "- **A shared view** (one refresher per node feeding the sidecars on it): with 50 "
          "sidecars per node, 20 refreshers instead of 1,000, 50x fewer requests and bytes ("
       << fmt("%.2f MB/s", 20 / 30.0 * one / 1e6) << " instead of "
       << fmt("%.1f MB/s", rate_1000 * one / 1e6) << " in the one-topic case).\n\n";
  }
  return md.str();
}

std::string run_scale_idle(const ScaleContext& ctx) {
  std::ostringstream md;
  std::string error;
  md << "## Scale: " << ctx.idle_connections << " idle client connections\n\n";
  ProxyProcess mock;
  if (!mock.start({ctx.self, "--serve-mock", "1", "16"}, ctx.out + "/scale-mock.log",
                  "mock ready", 20000, &error))
    return md.str() + "Not run: " + error + "\n\n";
  ProxyProcess eg;
  // Log level info: the descriptor statement at start is an info line when
  // the limit suffices.
  if (!start_eg(ctx, mock.ready_field("bootstrap"), "scale-idle", "", {}, "info", eg, &error))
    return md.str() + "Not run: " + error + "\n\n";
  std::string statement;
  size_t fit = static_cast<size_t>(ctx.idle_connections);
  {
    std::ifstream log(ctx.out + "/scale-idle.log");
    for (std::string line; std::getline(log, line);) {
      if (line.find("descriptor") == std::string::npos) continue;
      statement += (statement.empty() ? "" : "\n") + line;
      const auto at = line.find("about ");
      if (at != std::string::npos) fit = std::min(fit, static_cast<size_t>(std::atol(line.c_str() + at + 6)));
    }
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  std::string host;
  int port = 0;
  split_host_port(eg.ready_field("bootstrap"), &host, &port);
  const long rss0 = rss_kib_of(eg.pid());
  const long fds0 = fd_count(eg.pid());
  // A few openers at once: each connection costs the mock (one thread,
  // polling every socket it holds) an accept and two ApiVersions (epochgate's
  // dial probe and the client's), so one at a time grows quadratically; a
  // few in flight stay within the mock's listen backlog of 5.
  constexpr int kOpeners = 4;
  std::vector<std::vector<WireClient>> conns(kOpeners);
  const auto t0 = Clock::now();
  {
    std::vector<std::thread> openers;
    for (int k = 0; k < kOpeners; ++k) {
      openers.emplace_back([&, k] {
        const size_t share = fit / kOpeners + (static_cast<size_t>(k) < fit % kOpeners ? 1 : 0);
        conns[k].reserve(share);
        int failures = 0;
        while (conns[k].size() < share && failures < 3 &&
               std::chrono::duration<double>(Clock::now() - t0).count() < 240) {
          WireClient c;
          if (c.connect(host, port) && c.send_api_versions() && c.read_response()) {
            conns[k].push_back(std::move(c));
            failures = 0;
          } else {
            ++failures;
          }
        }
      });
    }
    for (auto& t : openers) t.join();
  }
  const double open_s = std::chrono::duration<double>(Clock::now() - t0).count();
  sleep_ms(2000);
  const long rss1 = rss_kib_of(eg.pid());
  const long fds1 = fd_count(eg.pid());
  size_t open = 0;
  for (const auto& v : conns) open += v.size();
  conns.clear();
  sleep_ms(2000);
  const long rss2 = rss_kib_of(eg.pid());
  const double per_conn = open > 0 ? (rss1 - rss0) / static_cast<double>(open) : 0;
  const double at_10k = (rss0 + per_conn * 10000) / 1024.0;
  log_scale("idle: " + std::to_string(open) + " connections, RSS " + std::to_string(rss1) +
            " KiB, fds " + std::to_string(fds1));
  md << "epochgate enforcing (default `limits.max_connections` 10000, default workers), the "
        "mock cluster in a child process; raw connections opened by 4 threads, each connection "
        "after one ApiVersions round trip (at most 240 s of opening), held 2 s. The descriptor limit is raised the way a user "
        "would: the bench sets its soft RLIMIT_NOFILE to the hard limit ("
     << lim.rlim_max
     << " in this container; raising the hard limit needs CAP_SYS_RESOURCE, which it does not "
        "have), and epochgate raises its own soft limit to the hard one at start.\n\n"
        "epochgate's statement of its descriptor needs at start (its log):\n\n```\n"
     << statement << "\n```\n\n";
  md << "| Figure | value | target |\n|---|---|---|\n";
  md << "| connections held (asked " << ctx.idle_connections << "; the limit fits " << fit
     << ") | " << open << " (opened in " << fmt("%.1f", open_s) << " s) | |\n";
  md << "| epochgate descriptors before / with them | " << fds0 << " / " << fds1 << " ("
     << fmt("%.2f", open > 0 ? (fds1 - fds0) / static_cast<double>(open) : 0)
     << " per connection: the client and its upstream) | |\n";
  md << "| epochgate RSS before / with them / 2 s after closing (MiB) | "
     << fmt("%.1f", rss0 / 1024.0) << " / " << fmt("%.1f", rss1 / 1024.0) << " / "
     << fmt("%.1f", rss2 / 1024.0) << " | |\n";
  md << "| RSS per connection (KiB) | " << fmt("%.2f", per_conn) << " | |\n";
  md << "| RSS at 10,000 connections (measured" << (open < 10000 ? ", scaled linearly from " +
                                                        std::to_string(open) : std::string(""))
     << ") | " << fmt("%.1f MiB", open >= 10000 ? rss1 / 1024.0 : at_10k) << " | < 256 MiB: "
     << ((open >= 10000 ? rss1 / 1024.0 : at_10k) < 256 ? "**met**" : "**missed**") << " |\n\n";
  return md.str();
}

namespace {
volatile sig_atomic_t g_mock_stop = 0;
void on_mock_signal(int) { g_mock_stop = 1; }
}  // namespace

int serve_mock_main(int topics, int partitions) {
  signal(SIGTERM, on_mock_signal);
  signal(SIGINT, on_mock_signal);
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  std::string error;
  auto cluster = EmbeddedCluster::create(3, "t", partitions, &error);
  if (!cluster) {
    std::fprintf(stderr, "mock: %s\n", error.c_str());
    return 1;
  }
  for (int t = 1; t < topics; ++t) cluster->create_topic(topic_name(t), partitions);
  std::printf("mock ready bootstrap=%s\n", cluster->bootstrap().c_str());
  std::fflush(stdout);
  while (!g_mock_stop) sleep_ms(100);
  return 0;
}

}  // namespace epochgate::bench
