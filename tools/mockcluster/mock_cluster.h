// tools/mockcluster: owns one librdkafka 2.15.1 mock cluster (rdkafka_mock.h)
// and the rd_kafka_t handle it needs for book-keeping. Test tooling only: it
// is never linked into the epochgate proxy, and it never binds anything but
// loopback (the mock itself binds 127.0.0.1:0 per broker).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct rd_kafka_s;
struct rd_kafka_mock_cluster_s;

namespace epochgate::mockcluster {

/// Result of one mock-cluster operation: empty error means success.
struct OpResult {
  std::string error;  ///< librdkafka error name, or a reason; empty on success
  bool ok() const { return error.empty(); }
};

/// A running mock cluster with brokers 1..N. Every method is synchronous: it
/// returns once the mock cluster's own thread has applied the change.
class MockCluster {
 public:
  /// Creates the cluster. `log_level` is a syslog level (0-7) for librdkafka
  /// logs on stderr; `debug` is a librdkafka debug context list ("mock", ...)
  /// or empty. Returns nullptr and fills `error` on failure.
  static std::unique_ptr<MockCluster> create(int broker_count, int log_level,
                                             const std::string& debug, std::string* error);
  ~MockCluster();
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;

  /// "host:port,host:port,..." in broker-id order, with `advertised_host_`.
  std::string bootstrap() const;
  /// Loopback ports of brokers 1..N, in broker-id order.
  const std::vector<int>& ports() const { return ports_; }

  /// Makes every broker advertise `host` (with its own port) in metadata.
  void advertise_host(const std::string& host);
  /// Makes one broker advertise `host:port` in metadata, so a front (a TLS
  /// terminator, a SASL gate) listening there is what clients dial.
  OpResult advertise(int32_t broker_id, const std::string& host, int port);

  OpResult create_topic(const std::string& topic, int partitions, int replication_factor);
  OpResult delete_topic(const std::string& topic);
  /// Moves leadership (-1: leaderless). The mock bumps the leader epoch by one.
  OpResult set_leader(const std::string& topic, int32_t partition, int32_t broker_id);
  OpResult set_follower(const std::string& topic, int32_t partition, int32_t broker_id);
  /// Next Metadata/Produce/Fetch response for the partition carries this
  /// leader (KIP-951 CurrentLeader), once.
  OpResult push_leader_response(const std::string& topic, int32_t partition, int32_t leader_id,
                                int32_t leader_epoch);
  OpResult set_down(int32_t broker_id);
  OpResult set_up(int32_t broker_id);
  OpResult set_rtt(int32_t broker_id, int rtt_ms);
  OpResult set_rack(int32_t broker_id, const std::string& rack);
  OpResult add_broker(int32_t broker_id);
  OpResult set_apiversion(int16_t api_key, int16_t min_version, int16_t max_version);
  /// The next `count` requests of `api_key` (any broker) fail with `error_code`.
  void push_errors(int16_t api_key, int error_code, int count);
  /// Same, on one broker, each answer delayed by `rtt_ms`.
  OpResult push_broker_errors(int32_t broker_id, int16_t api_key, int error_code, int count,
                              int rtt_ms);
  /// Partition-level error in the next `count` requests of `api_key` naming it.
  OpResult push_partition_errors(const std::string& topic, int32_t partition, int16_t api_key,
                                 int error_code, int count);
  void clear_errors(int16_t api_key);
  void set_controller(int32_t broker_id);
  OpResult set_coordinator(const std::string& key_type, const std::string& key,
                           int32_t broker_id);
  void set_rebalance_delay_ms(int delay_ms);
  /// 0 = latest (the mock's default), 1 = earliest.
  void set_share_offset_reset(int reset);
  /// Share groups: 0 = read_uncommitted (the mock's default), 1 = read_committed.
  void set_share_isolation(int level);

  void start_tracking();
  void stop_tracking();
  void clear_tracking();
  /// Counts of tracked requests as "broker:api_key=count" items, sorted.
  std::vector<std::string> tracked_counts();

 private:
  MockCluster() = default;

  rd_kafka_s* rk_ = nullptr;
  rd_kafka_mock_cluster_s* mock_ = nullptr;
  std::vector<int> ports_;
  std::string advertised_host_ = "127.0.0.1";
};

}  // namespace epochgate::mockcluster
