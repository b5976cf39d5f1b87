// bench/kafka_load: the leader-move benchmark. Under steady idempotent acks=all
// produce, moves partition leaders on the embedded cluster and measures how
// long the producer takes to succeed on the new leader and the produce
// latency around each move. Moves leaders only through rdkafka_mock.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "embedded_cluster.h"
#include "latency_samples.h"

namespace epochgate::bench {

/// Current leader of each partition as the bench moved them (index = partition).
struct LeaderTable {
  std::vector<int32_t> leader;
  int moves_done = 0;  ///< picks the next partition to move
};

/// Reads the leaders of `topic` through `bootstrap` (one Metadata request).
bool query_leaders(const std::string& bootstrap, const std::string& topic, LeaderTable* table,
                   std::string* error);

/// One run: steady produce through `bootstrap`, `moves` leader moves.
struct LeaderMoveSpec {
  std::string bootstrap;
  EmbeddedCluster* cluster = nullptr;  ///< the cluster behind `bootstrap`
  LeaderTable* leaders = nullptr;
  std::string topic = "m";
  int partitions = 16;
  int brokers = 3;
  double rate = 1000;            ///< messages/s over all partitions
  int moves = 3;
  double warm_seconds = 1.5;     ///< steady produce before the first move
  double after_move_seconds = 2;  ///< observation window per move
  int retry_backoff_ms = 0;       ///< client retry.backoff.ms; 0 = default (100)
};

/// What one move cost the producer.
struct MoveOutcome {
  int32_t partition = -1;
  int32_t from = -1, to = -1;
  bool recovered = false;
  double recovery_ms = 0;       ///< move -> first delivery acknowledged by the new leader
  double moved_p99_ms = 0;      ///< p99 latency of the moved partition's messages in the window
  double moved_max_ms = 0;
};

struct LeaderMoveResult {
  bool ok = false;
  std::string error;
  std::vector<MoveOutcome> moves;
  LatencySamples window_all;      ///< µs, messages of every partition live during a window
  LatencySamples window_moved;    ///< µs, the moved partition's messages during its window
  long long failed = 0;
  long long delivered = 0;
};

LeaderMoveResult run_leader_moves(const LeaderMoveSpec& spec);

}  // namespace epochgate::bench
