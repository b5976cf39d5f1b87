// bench/kafka_load: the cost of scale. A cluster of many partitions (a full
// Metadata response through epochgate against direct, view memory, the
// refresher's cost), many idle client connections (resident memory and
// descriptors), and a fleet of sidecars (the Metadata load they put on the
// cluster). Each scenario renders its own RESULTS.md section from what it
// measured. A benchmark: asserts nothing; never touches processes it did not
// start.
#pragma once

#include <string>

namespace epochgate::bench {

/// What the scale scenarios need from the driver's options.
struct ScaleContext {
  std::string epochgate;  ///< epochgate binary
  std::string self;       ///< this program (run again as a mock-cluster child)
  std::string out;        ///< output directory (configs, logs)
  int topics = 100;       ///< scale cluster: topics ...
  int partitions = 1000;  ///< ... of this many partitions each
  int metadata_round_trips = 20;  ///< measured full-Metadata round trips per path
  int idle_connections = 10000;
  int sidecars = 20;               ///< epochgate processes in the fleet simulation
  double sidecar_window_s = 35;    ///< how long the fleet is watched (default refresh 30 s)
};

/// Full Metadata at topics x partitions: latency direct vs through epochgate
/// enforcing, view memory per partition (RSS before/after learning), the
/// refresher's CPU per refresh; then the sidecar fleet on the same cluster.
/// Returns markdown (sections for RESULTS.md).
std::string run_scale_metadata_and_sidecars(const ScaleContext& ctx);

/// `ctx.idle_connections` idle client connections through epochgate
/// enforcing (the mock cluster in a child process so each process stays
/// within its descriptor limit): RSS, descriptors, and epochgate's own
/// statement of its descriptor needs. Returns markdown.
std::string run_scale_idle(const ScaleContext& ctx);

/// Child mode: serves a mock cluster (3 brokers, `topics` x `partitions`)
/// until SIGTERM, after printing "mock ready bootstrap=HOST:PORT,...".
int serve_mock_main(int topics, int partitions);

}  // namespace epochgate::bench
