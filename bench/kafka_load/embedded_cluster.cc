// bench/kafka_load: thin wrapper over rdkafka_mock.h for the bench driver.
#include "embedded_cluster.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <dirent.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace epochgate::bench {

namespace {

/// Thread ids of this process whose name is `comm` (/proc/self/task/*/comm).
std::set<pid_t> threads_named(const std::string& comm) {
  std::set<pid_t> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (dirent* d = readdir(dir)) {
    if (d->d_name[0] == '.') continue;
    std::ifstream in(std::string("/proc/self/task/") + d->d_name + "/comm");
    std::string name;
    if (std::getline(in, name) && name == comm) out.insert(std::atoi(d->d_name));
  }
  closedir(dir);
  return out;
}

}  // namespace

std::unique_ptr<EmbeddedCluster> EmbeddedCluster::create(int brokers, const std::string& topic,
                                                         int partitions, std::string* error) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "client.id", "epochgate-bench-mock", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    *error = errstr;
    rd_kafka_conf_destroy(conf);
    return nullptr;
  }
  std::unique_ptr<EmbeddedCluster> c(new EmbeddedCluster());
  c->rk_ = rk;
  // librdkafka names the mock cluster's one thread "rdk:mock"; clusters are
  // made one after another, so the new one is the thread that was not there.
  const std::set<pid_t> before = threads_named("rdk:mock");
  c->mock_ = rd_kafka_mock_cluster_new(rk, brokers);
  if (c->mock_ == nullptr) {
    *error = "rd_kafka_mock_cluster_new failed";
    return nullptr;
  }
  // The thread names itself once running: wait for it (at most 1 s).
  for (int i = 0; i < 1000 && c->thread_id_ < 0; ++i) {
    for (pid_t tid : threads_named("rdk:mock"))
      if (before.count(tid) == 0) c->thread_id_ = tid;
    if (c->thread_id_ < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::stringstream list(rd_kafka_mock_cluster_bootstraps(c->mock_));
  for (std::string item; std::getline(list, item, ',');) {
    const auto colon = item.rfind(':');
    if (colon != std::string::npos) c->ports_.push_back(std::atoi(item.c_str() + colon + 1));
  }
  if (static_cast<int>(c->ports_.size()) != brokers) {
    *error = "unexpected mock bootstrap list";
    return nullptr;
  }
  c->topic_ = topic;
  if (!c->create_topic(topic, partitions)) {
    *error = "cannot create topic " + topic;
    return nullptr;
  }
  return c;
}

EmbeddedCluster::~EmbeddedCluster() {
  if (mock_ != nullptr) rd_kafka_mock_cluster_destroy(mock_);
  if (rk_ != nullptr) rd_kafka_destroy(rk_);
}

std::string EmbeddedCluster::bootstrap() const {
  std::string out;
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (i > 0) out += ',';
    out += "127.0.0.1:" + std::to_string(ports_[i]);
  }
  return out;
}

void EmbeddedCluster::advertise_port(int32_t id, int port) {
  rd_kafka_mock_broker_set_host_port(mock_, id, "127.0.0.1", port);
}

bool EmbeddedCluster::cap_api(int16_t api_key, int16_t min_version, int16_t max_version) {
  return rd_kafka_mock_set_apiversion(mock_, api_key, min_version, max_version) ==
         RD_KAFKA_RESP_ERR_NO_ERROR;
}

bool EmbeddedCluster::set_leader(int32_t partition, int32_t broker) {
  return rd_kafka_mock_partition_set_leader(mock_, topic_.c_str(), partition, broker) ==
         RD_KAFKA_RESP_ERR_NO_ERROR;
}

bool EmbeddedCluster::create_topic(const std::string& topic, int partitions) {
  return rd_kafka_mock_topic_create(mock_, topic.c_str(), partitions,
                                    static_cast<int>(ports_.size())) ==
         RD_KAFKA_RESP_ERR_NO_ERROR;
}

void EmbeddedCluster::start_request_tracking() {
  rd_kafka_mock_clear_requests(mock_);
  rd_kafka_mock_start_request_tracking(mock_);
}

std::vector<int64_t> EmbeddedCluster::request_times_us(int16_t api_key) {
  size_t n = 0;
  std::vector<int64_t> times;
  rd_kafka_mock_request_t** reqs = rd_kafka_mock_get_requests(mock_, &n);
  for (size_t i = 0; i < n; ++i) {
    if (rd_kafka_mock_request_api_key(reqs[i]) == api_key)
      times.push_back(rd_kafka_mock_request_timestamp(reqs[i]));
  }
  rd_kafka_mock_request_destroy_array(reqs, n);
  return times;
}

}  // namespace epochgate::bench
