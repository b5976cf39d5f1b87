// bench/kafka_load: librdkafka producer/consumer loops.
#include "client_load.h"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace epochgate::bench {

long long steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

// The number after `"key":` at or after `from` in librdkafka's statistics
// JSON (any spaces around the colon); `*end` (may be null) is where it ends.
bool number_after(const std::string& json, const std::string& key, size_t from, double* value,
                  size_t* end) {
  const std::string quoted = "\"" + key + "\"";
  for (size_t at = json.find(quoted, from); at != std::string::npos;
       at = json.find(quoted, at + 1)) {
    size_t i = at + quoted.size();
    while (i < json.size() && json[i] == ' ') ++i;
    if (i >= json.size() || json[i] != ':') continue;
    ++i;
    while (i < json.size() && json[i] == ' ') ++i;
    char* stop = nullptr;
    *value = std::strtod(json.c_str() + i, &stop);
    if (stop == json.c_str() + i) continue;
    if (end) *end = static_cast<size_t>(stop - json.c_str());
    return true;
  }
  return false;
}

// Sum of every `"key": N` in the JSON: one per broker for broker counters.
double sum_of(const std::string& json, const std::string& key) {
  double total = 0, v = 0;
  for (size_t from = 0, end = 0; number_after(json, key, from, &v, &end); from = end) total += v;
  return total;
}

// Sums of the "sum" and "cnt" of every rolling-average object `name` (the
// topics' "batchsize", "batchcnt"): each statistics emission covers the
// window since the previous one, so adding every emission adds up the run.
void add_window(const std::string& json, const std::string& name, double* sum, double* cnt) {
  const std::string quoted = "\"" + name + "\"";
  for (size_t at = json.find(quoted); at != std::string::npos; at = json.find(quoted, at + 1)) {
    const size_t close = json.find('}', at);
    double v = 0;
    size_t end = 0;
    if (number_after(json, "sum", at, &v, &end) && end < close) *sum += v;
    if (number_after(json, "cnt", at, &v, &end) && end < close) *cnt += v;
  }
}

// Request counts and bytes of one statistics emission, summed over brokers.
// Only the "brokers" object: the partitions under "topics" have counters of
// the same names (their record bytes), which would count everything twice.
void totals(const std::string& json, const char* api, bool received, WireShape* out) {
  const size_t begin = json.find("\"brokers\"");
  const size_t end = json.find("\"topics\"");
  const std::string brokers =
      begin == std::string::npos ? std::string() : json.substr(begin, end == std::string::npos
                                                                          ? std::string::npos
                                                                          : end - begin);
  out->requests = static_cast<long long>(sum_of(brokers, api));
  out->bytes = sum_of(brokers, received ? "rxbytes" : "txbytes");
}

struct ShapeState {
  bool measuring = false;
  std::string last_json;  ///< the latest emission (cumulative counters)
  WireShape base;         ///< counters when measuring began
  double batches = 0, batch_bytes = 0, batch_records = 0, unused = 0;
  long long emissions = 0;
};

void record_stats(ShapeState& sh, const char* json, size_t len) {
  sh.last_json.assign(json, len);
  ++sh.emissions;
  if (sh.measuring) {
    add_window(sh.last_json, "batchsize", &sh.batch_bytes, &sh.batches);
    add_window(sh.last_json, "batchcnt", &sh.batch_records, &sh.unused);
  }
}

// Serves events until a statistics emission newer than now has arrived (at
// most 2 s): counters read after it cover everything sent before this call.
void await_emission(rd_kafka_t* rk, const ShapeState& sh) {
  const long long seen = sh.emissions;
  const long long deadline = steady_ns() + 2000000000LL;
  while (sh.emissions <= seen && steady_ns() < deadline) rd_kafka_poll(rk, 50);
}

int on_consumer_stats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  record_stats(*static_cast<ShapeState*>(opaque), json, len);
  return 0;  // librdkafka frees the JSON
}

struct ProduceState {
  const ProduceSpec* spec = nullptr;
  bool measuring = false;
  long long delivered = 0;
  long long failed = 0;
  long long warm_outstanding = 0;
  long long last_done_ns = 0;
  LatencySamples* latency = nullptr;
  std::string first_error;
  ShapeState shape;
};

int on_stats(rd_kafka_t*, char* json, size_t len, void* opaque) {
  record_stats(static_cast<ProduceState*>(opaque)->shape, json, len);
  return 0;  // librdkafka frees the JSON
}

// The shape of the measured phase: counters now minus when it began.
WireShape measured_shape(const ShapeState& sh, const char* api, bool received) {
  WireShape now;
  totals(sh.last_json, api, received, &now);
  now.requests -= sh.base.requests;
  now.bytes -= sh.base.bytes;
  now.batches = static_cast<long long>(sh.batches);
  now.batch_bytes = sh.batch_bytes;
  now.batch_records = sh.batch_records;
  return now;
}

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* st = static_cast<ProduceState*>(opaque);
  const long long now = steady_ns();
  const long long sent = reinterpret_cast<intptr_t>(m->_private);
  if (sent < 0) {  // warm-up message
    --st->warm_outstanding;
    return;
  }
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ++st->failed;
    if (st->first_error.empty()) st->first_error = rd_kafka_err2name(m->err);
  } else {
    ++st->delivered;
    st->latency->add_ns(now - sent);
  }
  st->last_done_ns = now;
  if (st->spec->on_delivery) {
    DeliveryEvent ev;
    ev.partition = m->partition;
    ev.broker_id = rd_kafka_message_broker_id(m);
    ev.ok = m->err == RD_KAFKA_RESP_ERR_NO_ERROR;
    ev.sent_ns = sent;
    ev.done_ns = now;
    st->spec->on_delivery(ev);
  }
}

bool set(rd_kafka_conf_t* conf, const char* key, const std::string& value, std::string* error) {
  char errstr[256];
  if (rd_kafka_conf_set(conf, key, value.c_str(), errstr, sizeof errstr) == RD_KAFKA_CONF_OK)
    return true;
  *error = std::string(key) + ": " + errstr;
  return false;
}

}  // namespace

ProduceResult run_produce(const ProduceSpec& spec) {
  ProduceResult result;
  ProduceState st;
  st.spec = &spec;
  st.latency = &result.latency;
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::string& err = result.error;
  if (!set(conf, "bootstrap.servers", spec.bootstrap, &err) ||
      !set(conf, "acks", spec.acks, &err) ||
      !set(conf, "linger.ms", std::to_string(spec.linger_ms), &err) ||
      !set(conf, "queue.buffering.max.messages", std::to_string(spec.window_messages), &err) ||
      !set(conf, "enable.idempotence", spec.idempotent ? "true" : "false", &err) ||
      !set(conf, "socket.nagle.disable", "true", &err) ||
      !set(conf, "compression.type", "none", &err) ||
      !set(conf, "log_level", "3", &err) ||
      !set(conf, "message.timeout.ms", "60000", &err) ||
      (spec.retry_backoff_ms > 0 &&
       !set(conf, "retry.backoff.ms", std::to_string(spec.retry_backoff_ms), &err)) ||
      (spec.window_kbytes > 0 &&
       !set(conf, "queue.buffering.max.kbytes", std::to_string(spec.window_kbytes), &err)) ||
      (spec.batch_bytes > 0 && !set(conf, "batch.size", std::to_string(spec.batch_bytes), &err)) ||
      (spec.batch_messages > 0 &&
       !set(conf, "batch.num.messages", std::to_string(spec.batch_messages), &err)) ||
      (spec.max_message_bytes > 0 &&
       !set(conf, "message.max.bytes", std::to_string(spec.max_message_bytes), &err)) ||
      (spec.wire_shape && !set(conf, "statistics.interval.ms", "200", &err))) {
    rd_kafka_conf_destroy(conf);
    return result;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  if (spec.wire_shape) rd_kafka_conf_set_stats_cb(conf, on_stats);
  rd_kafka_conf_set_opaque(conf, &st);
  char errstr[256];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    err = errstr;
    rd_kafka_conf_destroy(conf);
    return result;
  }
  rd_kafka_topic_t* topic = rd_kafka_topic_new(rk, spec.topic.c_str(), nullptr);
  std::vector<char> payload(static_cast<size_t>(spec.message_bytes), 'x');

  auto produce_one = [&](long long index, intptr_t opaque) {
    const int32_t partition = static_cast<int32_t>(index % spec.partitions);
    int flags = 0;
    if (spec.embed_send_time) {
      const long long t = steady_ns();
      std::memcpy(payload.data(), &t, sizeof t);
      flags = RD_KAFKA_MSG_F_COPY;
    }
    while (rd_kafka_produce(topic, partition, flags, payload.data(), payload.size(), nullptr, 0,
                            reinterpret_cast<void*>(opaque)) != 0) {
      if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL) return false;
      rd_kafka_poll(rk, 1);
    }
    return true;
  };

  // Warm-up: connections and metadata are set up before the clock starts.
  for (int i = 0; i < spec.warmup_messages; ++i) {
    ++st.warm_outstanding;
    if (!produce_one(i, -1)) {
      err = std::string("produce: ") + rd_kafka_err2name(rd_kafka_last_error());
      break;
    }
  }
  rd_kafka_flush(rk, 30000);
  if (err.empty() && st.warm_outstanding != 0) err = "warm-up messages not delivered in 30 s";

  if (err.empty()) {
    if (spec.wire_shape) {
      // Counters from here on: the latest emission after the warm-up.
      await_emission(rk, st.shape);
      totals(st.shape.last_json, "Produce", false, &st.shape.base);
      st.shape.measuring = true;
    }
    const long long start = steady_ns();
    const long long end = start + static_cast<long long>(spec.seconds * 1e9);
    const double interval_ns = spec.rate > 0 ? 1e9 / spec.rate : 0;
    long long i = 0;
    long long last_tick = 0;
    for (long long now = start; now < end; now = steady_ns()) {
      if (spec.on_tick && now - last_tick >= 1000000) {
        spec.on_tick(static_cast<double>(now - start) / 1e9);
        last_tick = now;
      }
      if (interval_ns > 0) {
        const long long due = start + static_cast<long long>(static_cast<double>(i) * interval_ns);
        if (now < due) {
          rd_kafka_poll(rk, 0);
          const long long wait_ns = due - now;
          if (wait_ns > 200000) std::this_thread::sleep_for(std::chrono::microseconds(150));
          continue;
        }
      }
      if (!produce_one(i, static_cast<intptr_t>(steady_ns()))) {
        err = std::string("produce: ") + rd_kafka_err2name(rd_kafka_last_error());
        break;
      }
      ++i;
      if ((i & 255) == 0) rd_kafka_poll(rk, 0);
    }
    // Let the tail drain (ticks keep running for leader-move bookkeeping).
    const long long drain_deadline = steady_ns() + 60LL * 1000000000;
    while (rd_kafka_outq_len(rk) > 0 && steady_ns() < drain_deadline) {
      rd_kafka_poll(rk, 5);
      if (spec.on_tick) spec.on_tick(static_cast<double>(steady_ns() - start) / 1e9);
    }
    if (spec.wire_shape) {
      await_emission(rk, st.shape);  // one more emission covering the tail
      result.shape = measured_shape(st.shape, "Produce", false);
    }
    result.delivered = st.delivered;
    result.failed = st.failed;
    result.seconds = static_cast<double>(st.last_done_ns - start) / 1e9;
    if (err.empty() && rd_kafka_outq_len(rk) > 0) err = "messages still queued after 60 s";
    if (err.empty() && st.failed > 0)
      err = std::to_string(st.failed) + " messages failed (first: " + st.first_error + ")";
    result.ok = err.empty();
  }
  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(rk);
  return result;
}

ConsumeResult run_consume(const ConsumeSpec& spec, const std::atomic<bool>* stop,
                          std::atomic<bool>* ready) {
  ConsumeResult result;
  static std::atomic<int> group_seq{0};
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  std::string& err = result.error;
  const std::string group = "epochgate-bench-" + std::to_string(++group_seq);
  if (!set(conf, "bootstrap.servers", spec.bootstrap, &err) ||
      !set(conf, "group.id", group, &err) ||
      !set(conf, "enable.auto.commit", "false", &err) ||
      !set(conf, "enable.partition.eof", "false", &err) ||
      !set(conf, "fetch.wait.max.ms", std::to_string(spec.fetch_wait_max_ms), &err) ||
      (spec.partition_fetch_bytes > 0 &&
       !set(conf, "max.partition.fetch.bytes", std::to_string(spec.partition_fetch_bytes),
            &err)) ||
      (spec.fetch_max_bytes > 0 &&
       (!set(conf, "message.max.bytes", std::to_string(spec.fetch_max_bytes), &err) ||
        !set(conf, "fetch.max.bytes", std::to_string(spec.fetch_max_bytes), &err))) ||
      !set(conf, "socket.nagle.disable", "true", &err) ||
      !set(conf, "log_level", "3", &err) ||
      (spec.wire_shape && !set(conf, "statistics.interval.ms", "200", &err))) {
    rd_kafka_conf_destroy(conf);
    if (ready) *ready = true;
    return result;
  }
  ShapeState shape;
  shape.measuring = true;
  if (spec.wire_shape) {
    rd_kafka_conf_set_stats_cb(conf, on_consumer_stats);
    rd_kafka_conf_set_opaque(conf, &shape);
  }
  char errstr[256];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    err = errstr;
    rd_kafka_conf_destroy(conf);
    if (ready) *ready = true;
    return result;
  }
  auto assign_all = [&] {
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(spec.partitions);
    for (int p = 0; p < spec.partitions; ++p) {
      rd_kafka_topic_partition_list_add(parts, spec.topic.c_str(), p)->offset =
          spec.from_beginning ? RD_KAFKA_OFFSET_BEGINNING : RD_KAFKA_OFFSET_END;
    }
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    return e;
  };
  rd_kafka_resp_err_t aerr = assign_all();
  if (ready) *ready = true;
  if (aerr != RD_KAFKA_RESP_ERR_NO_ERROR) {
    err = std::string("assign: ") + rd_kafka_err2name(aerr);
  } else {
    const long long deadline = steady_ns() + static_cast<long long>(spec.timeout_seconds * 1e9);
    long long first_ns = 0, last_ns = 0, seen = 0;
    while (steady_ns() < deadline && (stop == nullptr || !stop->load())) {
      if (spec.max_messages > 0 && seen >= spec.max_messages) {
        const double elapsed = static_cast<double>(steady_ns() - first_ns) / 1e9;
        if (elapsed >= spec.repeat_for_seconds) break;
        // Another pass over the same messages: assigning anew drops what
        // was fetched past them and starts every partition at its beginning.
        if ((aerr = assign_all()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
          err = std::string("assign: ") + rd_kafka_err2name(aerr);
          break;
        }
        seen = 0;
        ++result.passes;
      }
      if (spec.wire_shape) rd_kafka_poll(rk, 0);  // statistics arrive on the main queue
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50);
      if (m == nullptr) continue;
      const long long now = steady_ns();
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++seen;
        // The first message only starts the throughput clock.
        if (first_ns == 0) {
          first_ns = now;
        } else {
          ++result.messages;
          result.bytes += static_cast<long long>(m->len);
        }
        last_ns = now;
        if (spec.measure_end_to_end && m->len >= 8) {
          long long sent = 0;
          std::memcpy(&sent, m->payload, sizeof sent);
          if (sent > 0 && sent <= now) result.end_to_end.add_ns(now - sent);
        }
      } else if (err.empty()) {
        err = std::string("consume: ") + rd_kafka_err2name(m->err);
      }
      rd_kafka_message_destroy(m);
    }
    result.seconds = static_cast<double>(last_ns - first_ns) / 1e9;
    if (spec.wire_shape) {
      await_emission(rk, shape);
      result.shape = measured_shape(shape, "Fetch", true);
    }
    if (spec.max_messages > 0 && seen < spec.max_messages && err.empty())
      err = "only " + std::to_string(seen) + " of " + std::to_string(spec.max_messages) +
            " messages before the timeout";
    result.ok = err.empty();
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return result;
}

}  // namespace epochgate::bench
