// tools/mockcluster: thin synchronous wrapper over rdkafka_mock.h. It must
// never keep its own copy of cluster state (leaders, epochs): the mock is the
// single source of truth, so tests observe what clients observe.
#include "mock_cluster.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

namespace epochgate::mockcluster {
namespace {

std::mutex g_log_mutex;

// librdkafka calls this from its own threads; serialise whole lines.
void log_to_stderr(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  std::fprintf(stderr, "mockcluster rdkafka %d %s: %s\n", level, fac, buf);
  std::fflush(stderr);
}

OpResult from_err(rd_kafka_resp_err_t err) {
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return {rd_kafka_err2name(err)};
}

}  // namespace

std::unique_ptr<MockCluster> MockCluster::create(int broker_count, int log_level,
                                                 const std::string& debug, std::string* error) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set_log_cb(conf, log_to_stderr);
  const std::string level = std::to_string(log_level);
  if (rd_kafka_conf_set(conf, "log_level", level.c_str(), errstr, sizeof errstr) !=
          RD_KAFKA_CONF_OK ||
      rd_kafka_conf_set(conf, "client.id", "epochgate-mockcluster", errstr, sizeof errstr) !=
          RD_KAFKA_CONF_OK ||
      (!debug.empty() &&
       rd_kafka_conf_set(conf, "debug", debug.c_str(), errstr, sizeof errstr) !=
           RD_KAFKA_CONF_OK)) {
    *error = errstr;
    rd_kafka_conf_destroy(conf);
    return nullptr;
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    *error = errstr;
    rd_kafka_conf_destroy(conf);
    return nullptr;
  }
  rd_kafka_mock_cluster_t* mock = rd_kafka_mock_cluster_new(rk, broker_count);
  if (mock == nullptr) {
    *error = "rd_kafka_mock_cluster_new failed";
    rd_kafka_destroy(rk);
    return nullptr;
  }
  std::unique_ptr<MockCluster> cluster(new MockCluster());
  cluster->rk_ = rk;
  cluster->mock_ = mock;
  // The mock names its listeners "127.0.0.1:port,..." in broker-id order.
  std::stringstream list(rd_kafka_mock_cluster_bootstraps(mock));
  std::string item;
  while (std::getline(list, item, ',')) {
    const auto colon = item.rfind(':');
    if (colon != std::string::npos) cluster->ports_.push_back(std::atoi(item.c_str() + colon + 1));
  }
  if (static_cast<int>(cluster->ports_.size()) != broker_count) {
    *error = std::string("unexpected bootstrap list: ") + rd_kafka_mock_cluster_bootstraps(mock);
    return nullptr;
  }
  return cluster;
}

MockCluster::~MockCluster() {
  if (mock_ != nullptr) rd_kafka_mock_cluster_destroy(mock_);
  if (rk_ != nullptr) rd_kafka_destroy(rk_);
}

std::string MockCluster::bootstrap() const {
  std::string out;
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (i > 0) out += ',';
    out += advertised_host_ + ":" + std::to_string(ports_[i]);
  }
  return out;
}

void MockCluster::advertise_host(const std::string& host) {
  advertised_host_ = host;
  for (size_t i = 0; i < ports_.size(); ++i)
    rd_kafka_mock_broker_set_host_port(mock_, static_cast<int32_t>(i + 1), host.c_str(),
                                       ports_[i]);
}

OpResult MockCluster::advertise(int32_t broker_id, const std::string& host, int port) {
  if (broker_id < 1 || broker_id > static_cast<int32_t>(ports_.size()))
    return OpResult{"no broker " + std::to_string(broker_id)};
  rd_kafka_mock_broker_set_host_port(mock_, broker_id, host.c_str(), port);
  return OpResult{};
}

OpResult MockCluster::create_topic(const std::string& topic, int partitions,
                                   int replication_factor) {
  return from_err(rd_kafka_mock_topic_create(mock_, topic.c_str(), partitions, replication_factor));
}

OpResult MockCluster::delete_topic(const std::string& topic) {
  return from_err(rd_kafka_mock_topic_delete(mock_, topic.c_str()));
}

OpResult MockCluster::set_leader(const std::string& topic, int32_t partition, int32_t broker_id) {
  return from_err(rd_kafka_mock_partition_set_leader(mock_, topic.c_str(), partition, broker_id));
}

OpResult MockCluster::set_follower(const std::string& topic, int32_t partition,
                                   int32_t broker_id) {
  return from_err(rd_kafka_mock_partition_set_follower(mock_, topic.c_str(), partition, broker_id));
}

OpResult MockCluster::push_leader_response(const std::string& topic, int32_t partition,
                                           int32_t leader_id, int32_t leader_epoch) {
  return from_err(rd_kafka_mock_partition_push_leader_response(mock_, topic.c_str(), partition,
                                                               leader_id, leader_epoch));
}

OpResult MockCluster::set_down(int32_t broker_id) {
  return from_err(rd_kafka_mock_broker_set_down(mock_, broker_id));
}

OpResult MockCluster::set_up(int32_t broker_id) {
  return from_err(rd_kafka_mock_broker_set_up(mock_, broker_id));
}

OpResult MockCluster::set_rtt(int32_t broker_id, int rtt_ms) {
  return from_err(rd_kafka_mock_broker_set_rtt(mock_, broker_id, rtt_ms));
}

OpResult MockCluster::set_rack(int32_t broker_id, const std::string& rack) {
  return from_err(rd_kafka_mock_broker_set_rack(mock_, broker_id, rack.c_str()));
}

OpResult MockCluster::add_broker(int32_t broker_id) {
  return from_err(rd_kafka_mock_broker_add(mock_, broker_id));
}

OpResult MockCluster::set_apiversion(int16_t api_key, int16_t min_version, int16_t max_version) {
  return from_err(rd_kafka_mock_set_apiversion(mock_, api_key, min_version, max_version));
}

void MockCluster::push_errors(int16_t api_key, int error_code, int count) {
  std::vector<rd_kafka_resp_err_t> errors(static_cast<size_t>(count),
                                          static_cast<rd_kafka_resp_err_t>(error_code));
  rd_kafka_mock_push_request_errors_array(mock_, api_key, errors.size(), errors.data());
}

OpResult MockCluster::push_broker_errors(int32_t broker_id, int16_t api_key, int error_code,
                                         int count, int rtt_ms) {
  // The API is variadic (error, rtt) pairs; push one pair per call.
  for (int i = 0; i < count; ++i) {
    const rd_kafka_resp_err_t err = rd_kafka_mock_broker_push_request_error_rtts(
        mock_, broker_id, api_key, 1, static_cast<rd_kafka_resp_err_t>(error_code), rtt_ms);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return from_err(err);
  }
  return {};
}

OpResult MockCluster::push_partition_errors(const std::string& topic, int32_t partition,
                                            int16_t api_key, int error_code, int count) {
  for (int i = 0; i < count; ++i) {
    const rd_kafka_resp_err_t err = rd_kafka_mock_partition_push_request_errors(
        mock_, topic.c_str(), partition, api_key, 1, static_cast<rd_kafka_resp_err_t>(error_code));
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return from_err(err);
  }
  return {};
}

void MockCluster::clear_errors(int16_t api_key) {
  rd_kafka_mock_clear_request_errors(mock_, api_key);
}

void MockCluster::set_controller(int32_t broker_id) {
  rd_kafka_mock_set_controller_id(mock_, broker_id);
}

OpResult MockCluster::set_coordinator(const std::string& key_type, const std::string& key,
                                      int32_t broker_id) {
  return from_err(rd_kafka_mock_coordinator_set(mock_, key_type.c_str(), key.c_str(), broker_id));
}

void MockCluster::set_rebalance_delay_ms(int delay_ms) {
  rd_kafka_mock_group_initial_rebalance_delay_ms(mock_, delay_ms);
}

void MockCluster::set_share_offset_reset(int reset) {
  rd_kafka_mock_sharegroup_set_auto_offset_reset(mock_, reset);
}

void MockCluster::set_share_isolation(int level) {
  rd_kafka_mock_sharegroup_set_isolation_level(mock_, level);
}

void MockCluster::start_tracking() { rd_kafka_mock_start_request_tracking(mock_); }
void MockCluster::stop_tracking() { rd_kafka_mock_stop_request_tracking(mock_); }
void MockCluster::clear_tracking() { rd_kafka_mock_clear_requests(mock_); }

std::vector<std::string> MockCluster::tracked_counts() {
  size_t count = 0;
  rd_kafka_mock_request_t** requests = rd_kafka_mock_get_requests(mock_, &count);
  std::map<std::pair<int32_t, int16_t>, int> counts;
  for (size_t i = 0; i < count; ++i)
    ++counts[{rd_kafka_mock_request_id(requests[i]), rd_kafka_mock_request_api_key(requests[i])}];
  if (requests != nullptr) rd_kafka_mock_request_destroy_array(requests, count);
  std::vector<std::string> out;
  for (const auto& [key, n] : counts)
    out.push_back(std::to_string(key.first) + ":" + std::to_string(key.second) + "=" +
                  std::to_string(n));
  return out;
}

}  // namespace epochgate::mockcluster
