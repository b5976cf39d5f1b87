// tools/peers: producer side of the check. Every message carries its run id
// and sequence number in the value so consumers can account for it exactly;
// the delivery report is the only source of "acked".
#include "produce_phase.h"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "client_config.h"

namespace epochgate::peers {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kKeySpace = 1024;  // distinct keys, so every partition gets some

struct DrContext {
  RunLedger* ledger;
  bool acks0;  // no broker answer: librdkafka's offsets are guesses, not facts
  long marker_failures = 0;
};

// Runs on the producing thread inside rd_kafka_poll/flush.
void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* ctx = static_cast<DrContext*>(opaque);
  const auto seq = reinterpret_cast<intptr_t>(m->_private);
  if (seq < 0) {  // warm-up record or end-of-run marker
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++ctx->marker_failures;
      ctx->ledger->set_first_error(std::string("marker/warm-up: ") + rd_kafka_err2name(m->err));
    }
    return;
  }
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR)
    ctx->ledger->set_first_error(std::string("produce: ") + rd_kafka_err2name(m->err) + ": " +
                                 rd_kafka_err2str(m->err));
  ctx->ledger->report(static_cast<long>(seq), m->err, m->partition, ctx->acks0 ? -1 : m->offset,
                      rd_kafka_message_broker_id(m), wall_us());
}

int partition_count(rd_kafka_t* rk, const std::string& topic, double timeout_s,
                    std::string* error) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
  int count = -1;
  while (count < 0 && Clock::now() < deadline) {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1 && md->topics[0].err == 0 &&
        md->topics[0].partition_cnt > 0) {
      count = md->topics[0].partition_cnt;
    } else {
      *error = std::string("metadata: ") +
               rd_kafka_err2name(err != 0 ? err
                                          : (md != nullptr && md->topic_cnt == 1
                                                 ? md->topics[0].err
                                                 : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    if (md != nullptr) rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(rkt);
  return count;
}

std::string error_text(rd_kafka_error_t* error) {
  std::string text = std::string(rd_kafka_error_name(error)) + ": " + rd_kafka_error_string(error);
  rd_kafka_error_destroy(error);
  return text;
}

// Produces one message, waiting (polling) while the local queue is full.
rd_kafka_resp_err_t produce_one(rd_kafka_t* rk, const std::string& topic, int32_t partition,
                                const std::string* key, const std::string& value, intptr_t tag,
                                const std::atomic<bool>& stop) {
  // The RD_KAFKA_V_* macros paste their arguments unparenthesised.
  const void* key_data = key != nullptr ? key->data() : nullptr;
  const size_t key_size = key != nullptr ? key->size() : 0;
  void* value_data = const_cast<char*>(value.data());
  const size_t value_size = value.size();
  for (;;) {
    const rd_kafka_resp_err_t err = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_KEY(key_data, key_size), RD_KAFKA_V_VALUE(value_data, value_size),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(tag)),
        RD_KAFKA_V_END);
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || stop) return err;
    rd_kafka_poll(rk, 10);
  }
}

}  // namespace

bool run_produce(const CheckOptions& o, RunLedger& ledger, const std::atomic<bool>& stop,
                 const std::function<void()>& before_close) {
  const bool transactional = !o.transactional.empty();
  const bool visible = o.transactional != "abort";
  const int timeout_ms = static_cast<int>(o.produce_timeout_s * 1000);
  const bool want_markers = o.markers && (!o.consume_group.empty() || !o.share_group.empty());
  DrContext ctx{&ledger, o.acks == "0"};

  std::string error;
  rd_kafka_conf_t* conf = make_client_conf(o, ClientRole::kProducer, ledger.run_id(), &error);
  if (conf == nullptr) {
    ledger.set_first_error("config: " + error);
    ledger.finish_producing(visible, 0);
    return false;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_conf_set_opaque(conf, &ctx);
  char errstr[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    ledger.set_first_error(std::string("producer: ") + errstr);
    ledger.finish_producing(visible, 0);
    return false;
  }

  bool ok = true;
  const int partitions = partition_count(rk, o.topic, 30, &error);
  if (partitions < 0) {
    ledger.set_first_error(error);
    ok = false;
  }
  if (ok && transactional) {
    rd_kafka_error_t* e = rd_kafka_init_transactions(rk, timeout_ms);
    if (e == nullptr) e = rd_kafka_begin_transaction(rk);
    if (e != nullptr) {
      ledger.set_first_error("transaction start: " + error_text(e));
      ok = false;
    }
  }

  // Warm-up: one record per partition, flushed before the clock starts, so
  // delivery latencies measure steady state rather than connection set-up and
  // the idempotent producer's first ProducerId request. Transactions already
  // waited for their ProducerId in init_transactions.
  if (ok && o.warmup && !transactional && partitions > 0) {
    const auto warm_start = Clock::now();
    for (int p = 0; p < partitions; ++p)
      produce_one(rk, o.topic, p, nullptr, ledger.prefix() + "warmup:" + std::to_string(p),
                  -1 - p, stop);
    rd_kafka_flush(rk, timeout_ms);
    ledger.set_warmup_ms(
        std::chrono::duration<double, std::milli>(Clock::now() - warm_start).count());
  }

  const auto start = Clock::now();
  const auto end = start + std::chrono::milliseconds(static_cast<int64_t>(o.duration_s * 1000));
  const std::string prefix = ledger.prefix();
  std::string value;
  std::string key;
  for (long n = 0; ok && !stop; ++n) {
    if (o.duration_s > 0 ? Clock::now() >= end : n >= o.messages) break;
    if (o.rate > 0) {
      const auto due = start + std::chrono::microseconds(static_cast<int64_t>(n * 1e6 / o.rate));
      while (Clock::now() < due && !stop) {
        rd_kafka_poll(rk, 0);
        std::this_thread::sleep_until(std::min(due, Clock::now() + std::chrono::milliseconds(5)));
      }
    }
    const long seq = ledger.add_sent(wall_us());
    value = prefix + std::to_string(seq) + ":";
    if (static_cast<int>(value.size()) < o.message_size) value.resize(o.message_size, 'x');
    key = "k" + std::to_string(seq % kKeySpace);
    const rd_kafka_resp_err_t err =
        produce_one(rk, o.topic, RD_KAFKA_PARTITION_UA, o.partitions_keyed ? &key : nullptr, value,
                    static_cast<intptr_t>(seq), stop);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      ledger.set_first_error(std::string("produce call: ") + rd_kafka_err2name(err));
      ledger.report(seq, err, -1, -1, -1, wall_us());
      if (err == RD_KAFKA_RESP_ERR__FATAL) ok = false;
    }
    rd_kafka_poll(rk, 0);
  }

  // Everything handed over must be acknowledged (or failed) before the
  // transaction ends, so the abort case really aborts delivered records.
  if (rd_kafka_flush(rk, timeout_ms) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ledger.set_first_error("flush: timed out with " + std::to_string(rd_kafka_outq_len(rk)) +
                           " messages in flight");
    ok = false;
  }
  if (transactional && partitions > 0) {
    rd_kafka_error_t* e = nullptr;
    if (o.transactional == "commit" && ok) {
      e = rd_kafka_commit_transaction(rk, timeout_ms);
    } else {
      e = rd_kafka_abort_transaction(rk, timeout_ms);
    }
    if (e != nullptr) {
      ledger.set_first_error("end transaction: " + error_text(e));
      ok = false;
    }
  }

  int markers = 0;
  ctx.marker_failures = 0;  // warm-up failures were reported; markers start afresh
  if (want_markers && partitions > 0 && ok) {
    rd_kafka_error_t* e = transactional ? rd_kafka_begin_transaction(rk) : nullptr;
    for (int p = 0; e == nullptr && p < partitions; ++p) {
      const std::string marker = prefix + "marker:" + std::to_string(p);
      if (produce_one(rk, o.topic, p, nullptr, marker, -1 - p, stop) ==
          RD_KAFKA_RESP_ERR_NO_ERROR)
        ++markers;
    }
    if (e == nullptr && transactional) e = rd_kafka_commit_transaction(rk, timeout_ms);
    if (e != nullptr) ledger.set_first_error("marker transaction: " + error_text(e));
    rd_kafka_flush(rk, timeout_ms);
    if (ctx.marker_failures > 0) markers = 0;  // the consumer could never see them all
  }
  ledger.finish_producing(visible, want_markers ? (markers > 0 ? partitions : 0) : 0);
  if (before_close) before_close();
  rd_kafka_destroy(rk);
  return ok;
}

}  // namespace epochgate::peers
