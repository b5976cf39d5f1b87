// bench/kafka_load: a librdkafka 2.15.1 mock cluster living inside the bench
// process (rdkafka_mock.h). Bench tooling only: binds loopback, keeps no copy
// of cluster state, never linked into epochgate.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct rd_kafka_s;
struct rd_kafka_mock_cluster_s;

namespace epochgate::bench {

/// A mock cluster with brokers 1..N and one topic.
class EmbeddedCluster {
 public:
  /// Creates `brokers` brokers and `topic` with `partitions` partitions and
  /// replication factor `brokers`. Returns nullptr and sets `error` on failure.
  static std::unique_ptr<EmbeddedCluster> create(int brokers, const std::string& topic,
                                                 int partitions, std::string* error);
  ~EmbeddedCluster();
  EmbeddedCluster(const EmbeddedCluster&) = delete;
  EmbeddedCluster& operator=(const EmbeddedCluster&) = delete;

  /// "127.0.0.1:port,..." of the brokers' own listeners, in broker-id order.
  std::string bootstrap() const;
  const std::vector<int>& ports() const { return ports_; }
  /// The mock cluster's event thread (a Linux thread id of this process), -1
  /// if it was not found: every broker's request handling runs on it, so its
  /// time on a CPU is the brokers' cost (thread_cpu_seconds_of()).
  pid_t thread_id() const { return thread_id_; }

  /// Makes broker `id` (1-based) advertise 127.0.0.1:`port` in metadata
  /// (how the HAProxy configuration sends clients through HAProxy).
  void advertise_port(int32_t id, int port);
  /// Caps the ApiVersions range of `api_key` (e.g. Produce at v9: no KIP-951 hints).
  bool cap_api(int16_t api_key, int16_t min_version, int16_t max_version);
  /// Moves the leader of `partition` to `broker` (the mock bumps the epoch).
  bool set_leader(int32_t partition, int32_t broker);
  /// Creates another topic on the same brokers.
  bool create_topic(const std::string& topic, int partitions);
  /// Starts the mock's request log afresh (rd_kafka_mock_start_request_tracking).
  void start_request_tracking();
  /// Arrival times (µs, the mock's clock) of the requests of `api_key` the
  /// brokers received since start_request_tracking().
  std::vector<int64_t> request_times_us(int16_t api_key);

 private:
  EmbeddedCluster() = default;
  rd_kafka_s* rk_ = nullptr;
  rd_kafka_mock_cluster_s* mock_ = nullptr;
  std::string topic_;
  std::vector<int> ports_;
  pid_t thread_id_ = -1;
};

}  // namespace epochgate::bench
