// bench/kafka_load: producer and consumer load on the librdkafka 2.15.1
// client: throughput runs, fixed-rate runs, per-message delivery latency.
// Measures only what a client observes; knows nothing about the proxy in the
// path (the bootstrap address is all it gets).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "latency_samples.h"

namespace epochgate::bench {

/// The shape of the requests a client sent, from librdkafka's statistics
/// (statistics.interval.ms): what a proxy in the path sees per frame.
struct WireShape {
  long long requests = 0;    ///< Produce (or Fetch) requests sent in the measured phase
  double bytes = 0;          ///< bytes sent (producer) or received (consumer) on broker sockets
  long long batches = 0;     ///< producer: record batches (one per partition per request)
  double batch_bytes = 0;    ///< producer: bytes of those batches
  double batch_records = 0;  ///< producer: records in those batches
  /// Bytes per request (producer: request frames; consumer: response frames).
  double bytes_per_request() const { return requests > 0 ? bytes / requests : 0; }
  double batches_per_request() const {
    return requests > 0 ? static_cast<double>(batches) / requests : 0;
  }
  double records_per_batch() const { return batches > 0 ? batch_records / batches : 0; }
};

/// One delivery report as the producer saw it.
struct DeliveryEvent {
  int32_t partition = -1;
  int32_t broker_id = -1;   ///< broker that acknowledged (rd_kafka_message_broker_id)
  bool ok = false;
  long long sent_ns = 0;    ///< steady clock, when produce() accepted it
  long long done_ns = 0;    ///< steady clock, when the report was served
};

/// What to produce.
struct ProduceSpec {
  std::string bootstrap;
  std::string topic = "t";
  int partitions = 16;       ///< messages go round-robin to 0..partitions-1
  std::string acks = "1";    ///< "1" or "all"
  int message_bytes = 1024;
  double seconds = 4;        ///< measured phase length
  double rate = 0;           ///< messages/s; 0 = as fast as the window allows
  int linger_ms = 5;         ///< batching
  bool idempotent = false;
  int retry_backoff_ms = 0;     ///< retry.backoff.ms; 0 = librdkafka's default (100)
  int window_messages = 20000;  ///< queue.buffering.max.messages
  bool embed_send_time = false; ///< first 8 payload bytes = send time (for consumers)
  int warmup_messages = 200;    ///< produced and flushed before measuring
  int window_kbytes = 0;        ///< queue.buffering.max.kbytes; 0 = librdkafka's default
  int batch_bytes = 0;          ///< batch.size; 0 = librdkafka's default (1,000,000)
  int batch_messages = 0;       ///< batch.num.messages; 0 = librdkafka's default (10,000)
  int max_message_bytes = 0;    ///< message.max.bytes; 0 = librdkafka's default (1,000,000)
  bool wire_shape = false;      ///< collect ProduceResult::shape (statistics every 200 ms)
  /// Called for every delivery report of the measured phase (poll thread).
  std::function<void(const DeliveryEvent&)> on_delivery;
  /// Called from the produce loop about every millisecond with seconds since
  /// the measured phase began.
  std::function<void(double)> on_tick;
};

/// Result of a produce run.
struct ProduceResult {
  bool ok = false;
  std::string error;
  long long delivered = 0;
  long long failed = 0;
  double seconds = 0;  ///< first produce of the measured phase to last delivery report
  double msgs_per_sec() const { return seconds > 0 ? delivered / seconds : 0; }
  double mib_per_sec(int message_bytes) const {
    return msgs_per_sec() * message_bytes / (1024.0 * 1024.0);
  }
  LatencySamples latency;  ///< produce() to delivery report, µs
  WireShape shape;         ///< with ProduceSpec::wire_shape
};

ProduceResult run_produce(const ProduceSpec& spec);

/// What to consume.
struct ConsumeSpec {
  std::string bootstrap;
  std::string topic = "t";
  int partitions = 16;
  bool from_beginning = true;  ///< else from the end (for end-to-end latency)
  long long max_messages = 0;  ///< stop after this many (0: until stopped/timeout)
  /// With max_messages: once they are read, read them again from the
  /// beginning (the same consumer, partitions assigned anew) until this many
  /// seconds have passed since the first message; 0: one pass.
  double repeat_for_seconds = 0;
  double timeout_seconds = 10;
  int fetch_wait_max_ms = 100;
  /// max.partition.fetch.bytes and fetch.max.bytes (also message.max.bytes,
  /// which librdkafka wants no larger); 0: librdkafka's defaults.
  int partition_fetch_bytes = 0;
  int fetch_max_bytes = 0;
  bool measure_end_to_end = false;  ///< payload carries the send time
  bool wire_shape = false;          ///< collect ConsumeResult::shape (Fetch requests, rx bytes)
};

/// Result of a consume run.
struct ConsumeResult {
  bool ok = false;
  std::string error;
  long long messages = 0;
  long long bytes = 0;
  int passes = 1;      ///< reads of the max_messages (repeat_for_seconds)
  double seconds = 0;  ///< first message to last message
  double msgs_per_sec() const { return seconds > 0 ? messages / seconds : 0; }
  double mib_per_sec() const { return seconds > 0 ? bytes / seconds / (1024.0 * 1024.0) : 0; }
  LatencySamples end_to_end;  ///< send time to receipt, µs
  WireShape shape;            ///< with ConsumeSpec::wire_shape (whole run, all passes)
};

/// Consumes until max_messages, timeout, or `*stop` turns true (may be null).
/// `*ready` (may be null) turns true once the partitions are assigned.
ConsumeResult run_consume(const ConsumeSpec& spec, const std::atomic<bool>* stop,
                          std::atomic<bool>* ready);

/// Steady-clock nanoseconds (the clock every latency here uses).
long long steady_ns();

}  // namespace epochgate::bench
