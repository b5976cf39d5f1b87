// bench/kafka_load: the record-size sweep. Produce (acks=1 and acks=all) and
// Fetch at several record sizes through direct, HAProxy, epochgate enforcing
// (fencing on), the splice relay and the copy relay, alternating inside one
// run; CPU per GB and throughput as ratios, plus the shape of the frames each
// workload produced (bytes per request, partitions per request, records per
// batch) from the client's own statistics, so a figure can be read against
// another harness's. A benchmark: asserts nothing.
#pragma once

#include <sys/types.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "client_load.h"

namespace epochgate::bench {

class EmbeddedCluster;

/// One configuration of the rig the sweep drives.
struct SweepTarget {
  int config = -1;                     ///< ConfigId (bench_results.h)
  std::string bootstrap;               ///< what clients of this configuration bootstrap from
  pid_t pid = -1;                      ///< the proxy process (its CPU is measured); -1: direct
  EmbeddedCluster* cluster = nullptr;  ///< its own cluster (topics created, Fetch data preloaded)
};

/// How long and at which sizes.
struct SweepOptions {
  int rounds = 1;           ///< rounds per workload and size; the order rotates each round
  double seconds = 3;       ///< measured phase per run
  std::vector<int> sizes = {100, 1024, 16384, 1048576};  ///< record value bytes
  int window_kbytes = 32768;  ///< producer bytes in flight (queue.buffering.max.kbytes)
  std::set<std::string> workloads;  ///< workload names to run ("fetch", ...); empty: all
  std::function<void(const std::string&)> log;  ///< progress lines (may be empty)
};

/// batch.size of the small-frame producer, bytes.
constexpr int kSmallFrameBatchBytes = 16384;
/// linger.ms of the small-frame producer: far longer than a batch takes to
/// fill, so batch.size closes them.
constexpr int kSmallFrameLingerMs = 100;

/// The producer the sweep runs at `size`-byte records: librdkafka's batching
/// defaults (linger.ms 5, batch.size 1,000,000) with `options.window_kbytes`
/// in flight, so every size keeps the same client memory; batch.size and
/// message.max.bytes grow only where one record would not fit (1 MiB). With
/// `small_frames`: batches of kSmallFrameBatchBytes closed when full
/// (linger.ms 100) and 1 MiB in flight, so every configuration makes
/// requests of that size (one record each from that size up).
ProduceSpec sweep_produce_spec(const SweepOptions& options, const std::string& bootstrap,
                               const std::string& topic, int size, bool small_frames);

/// The producer that preloads the sweep's Fetch rows at `size`-byte records
/// (straight into a cluster, warmup_messages of them, about 32 MiB and at
/// least 32; the mock keeps at most 5 MiB per partition). Batches close on
/// a record count (1,000) or batch.size, never on linger.ms, so every
/// cluster holds the same batches: the mock answers one batch per partition,
/// so the batches are the Fetch responses' shape, and with linger.ms 5 that
/// shape followed the machine's load at fill time (100 B: 390-850 KB
/// responses between configurations of one run).
ProduceSpec sweep_fetch_fill_spec(const SweepOptions& options, const std::string& bootstrap,
                                  const std::string& topic, int size);

/// Runs the sweep over `targets` and returns its RESULTS.md section (markdown).
std::string run_size_sweep(const SweepOptions& options, const std::vector<SweepTarget>& targets);

}  // namespace epochgate::bench
