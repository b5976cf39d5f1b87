// tools/peers: consumer side of the check. It recognises the run's records by
// their value prefix and ignores everything else in the topic, so reruns on a
// reused topic stay exact.
#include "consume_phase.h"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>

#include "client_config.h"

namespace epochgate::peers {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kLinger = std::chrono::milliseconds(300);

// Tracks when to stop: `deadline_s` after production ends, or a linger after
// the ledger is complete.
class StopRule {
 public:
  StopRule(const CheckOptions& o, const RunLedger& ledger, const std::atomic<bool>& stop)
      : options_(o), ledger_(ledger), stop_(stop) {}

  bool should_stop() {
    if (stop_) return true;
    const auto now = Clock::now();
    if (!has_deadline_ && ledger_.producing_done()) {
      has_deadline_ = true;
      deadline_ = now + std::chrono::milliseconds(static_cast<int64_t>(options_.deadline_s * 1000));
    }
    if (has_deadline_ && now >= deadline_) {
      timed_out_ = true;
      return true;
    }
    if (!complete_ && ledger_.consume_complete()) {
      complete_ = true;
      complete_at_ = now;
    }
    return complete_ && now >= complete_at_ + kLinger;
  }
  bool timed_out() const { return timed_out_; }

 private:
  const CheckOptions& options_;
  const RunLedger& ledger_;
  const std::atomic<bool>& stop_;
  bool has_deadline_ = false;
  Clock::time_point deadline_{};
  bool complete_ = false;
  Clock::time_point complete_at_{};
  bool timed_out_ = false;
};

// Feeds one record's value to the ledger if it belongs to this run.
void account(RunLedger& ledger, const std::string& prefix, const rd_kafka_message_t* m,
             int delivery_count) {
  if (m->payload == nullptr || m->len < prefix.size()) return;
  const std::string_view value(static_cast<const char*>(m->payload), m->len);
  if (value.substr(0, prefix.size()) != prefix) return;  // another run's record
  const std::string_view rest = value.substr(prefix.size());
  if (rest.substr(0, 7) == "marker:") {
    ledger.marker_seen(m->partition);
    return;
  }
  if (rest.substr(0, 7) == "warmup:") return;
  const std::string digits(rest.substr(0, rest.find(':')));
  char* end = nullptr;
  const long seq = std::strtol(digits.c_str(), &end, 10);
  ledger.consumed(end != digits.c_str() ? seq : -1, m->partition, m->offset, delivery_count);
}

void report_timeout(RunLedger& ledger, const StopRule& rule) {
  if (rule.timed_out())
    ledger.set_first_error("consume: deadline passed with " + std::to_string(ledger.missing()) +
                           " acked messages not received");
}

void on_share_ack(rd_kafka_share_t*, rd_kafka_share_partition_offsets_list_t* list,
                  rd_kafka_resp_err_t err, void* opaque) {
  auto* ledger = static_cast<RunLedger*>(opaque);
  const size_t n = list != nullptr ? rd_kafka_share_partition_offsets_list_count(list) : 0;
  for (size_t i = 0; i < n; ++i) {
    const rd_kafka_share_partition_offsets_t* po = rd_kafka_share_partition_offsets_list_get(list, i);
    const rd_kafka_topic_partition_t* tp = rd_kafka_share_partition_offsets_partition(po);
    const rd_kafka_resp_err_t e = err != RD_KAFKA_RESP_ERR_NO_ERROR ? err : tp->err;
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      ledger->ack_failure(static_cast<long>(rd_kafka_share_partition_offsets_offsets_cnt(po)),
                          rd_kafka_err2name(e));
  }
}

}  // namespace

bool run_group_consume(const CheckOptions& o, RunLedger& ledger, const std::atomic<bool>& stop) {
  std::string error;
  rd_kafka_conf_t* conf = make_client_conf(o, ClientRole::kConsumer, ledger.run_id(), &error);
  if (conf == nullptr) {
    ledger.consume_error("config: " + error);
    return false;
  }
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    ledger.consume_error(std::string("consumer: ") + errstr);
    return false;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, o.topic.c_str(), RD_KAFKA_PARTITION_UA);
  const rd_kafka_resp_err_t sub = rd_kafka_subscribe(rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (sub != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ledger.consume_error(std::string("subscribe: ") + rd_kafka_err2name(sub));
    rd_kafka_destroy(rk);
    return false;
  }

  const std::string prefix = ledger.prefix();
  StopRule rule(o, ledger, stop);
  while (!rule.should_stop()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      account(ledger, prefix, m, 1);
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ledger.consume_error(std::string(rd_kafka_err2name(m->err)) + ": " +
                           rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
  }
  report_timeout(ledger, rule);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return true;
}

bool run_share_consume(const CheckOptions& o, RunLedger& ledger, const std::atomic<bool>& stop) {
  std::string error;
  rd_kafka_conf_t* conf = make_client_conf(o, ClientRole::kShareConsumer, ledger.run_id(), &error);
  if (conf == nullptr) {
    ledger.consume_error("config: " + error);
    return false;
  }
  char errstr[512];
  rd_kafka_share_t* share = rd_kafka_share_consumer_new(conf, errstr, sizeof errstr);
  if (share == nullptr) {
    rd_kafka_conf_destroy(conf);
    ledger.consume_error(std::string("share consumer: ") + errstr);
    return false;
  }
  if (rd_kafka_error_t* e = rd_kafka_share_set_acknowledgement_commit_cb(share, on_share_ack,
                                                                         &ledger)) {
    ledger.consume_error(std::string("ack callback: ") + rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
  }
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, o.topic.c_str(), RD_KAFKA_PARTITION_UA);
  const rd_kafka_resp_err_t sub = rd_kafka_share_subscribe(share, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (sub != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ledger.consume_error(std::string("share subscribe: ") + rd_kafka_err2name(sub));
    rd_kafka_share_destroy(share);
    return false;
  }

  const std::string prefix = ledger.prefix();
  StopRule rule(o, ledger, stop);
  while (!rule.should_stop()) {
    rd_kafka_messages_t* batch = nullptr;
    if (rd_kafka_error_t* e = rd_kafka_share_poll(share, 200, &batch)) {
      ledger.consume_error(std::string(rd_kafka_error_name(e)) + ": " + rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
    const size_t n = rd_kafka_messages_count(batch);
    for (size_t i = 0; i < n; ++i) {
      const rd_kafka_message_t* m = rd_kafka_messages_get(batch, i);
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        // librdkafka has already settled error records (REJECT or RELEASE).
        ledger.consume_error(std::string(rd_kafka_err2name(m->err)) + ": " +
                             rd_kafka_message_errstr(m));
        continue;
      }
      account(ledger, prefix, m, rd_kafka_message_delivery_count(m));
      const rd_kafka_resp_err_t ack =
          rd_kafka_share_acknowledge_type(share, m, RD_KAFKA_SHARE_ACKNOWLEDGE_TYPE_ACCEPT);
      if (ack != RD_KAFKA_RESP_ERR_NO_ERROR) ledger.ack_failure(1, rd_kafka_err2name(ack));
    }
    rd_kafka_messages_destroy(batch);
  }
  report_timeout(ledger, rule);

  // Send the last acknowledgements and wait for the brokers' verdicts.
  rd_kafka_topic_partition_list_t* results = nullptr;
  if (rd_kafka_error_t* e = rd_kafka_share_commit_sync(share, 10000, &results)) {
    ledger.ack_failure(1, rd_kafka_error_name(e));
    rd_kafka_error_destroy(e);
  }
  if (results != nullptr) {
    for (int i = 0; i < results->cnt; ++i)
      if (results->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR)
        ledger.ack_failure(1, rd_kafka_err2name(results->elems[i].err));
    rd_kafka_topic_partition_list_destroy(results);
  }
  if (rd_kafka_error_t* e = rd_kafka_share_consumer_close(share)) rd_kafka_error_destroy(e);
  if (rd_kafka_error_t* e = rd_kafka_share_destroy(share)) rd_kafka_error_destroy(e);
  return true;
}

}  // namespace epochgate::peers
