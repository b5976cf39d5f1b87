// tools/peers: the ledger of one check run: what was sent, what the broker
// acknowledged (partition, offset, latency) and what came back to consumers.
// Shared by the producer and consumer threads, so every access locks. It must
// never decide pass/fail itself; check_report does that from its counts.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace epochgate::peers {

/// Wall-clock microseconds since the Unix epoch (comparable across processes,
/// so scenario tests can line the timeline up with a leader move).
int64_t wall_us();

/// One produced message as the producer saw it.
struct SentMessage {
  int64_t send_us = 0;   ///< wall clock when handed to librdkafka
  int64_t ack_us = 0;    ///< wall clock of the delivery report (0: none yet)
  int64_t consume_us = 0;  ///< wall clock a consumer first received it (0: never)
  int32_t consumed_partition = -1;  ///< where a consumer first received it (-1: never)
  int64_t consumed_offset = -1;     ///< at which offset (-1: never)
  int32_t partition = -1;
  int64_t offset = -1;   ///< -1 when unknown (acks=0)
  int32_t broker = -1;   ///< broker id that acknowledged, -1 if unknown
  int error = 0;         ///< rd_kafka_resp_err_t of the delivery report
  bool acked = false;    ///< delivered successfully
  bool reported = false; ///< a delivery report arrived (success or failure)
};

/// Counts a consumer derives while reading back.
struct ConsumeCounts {
  long consumed = 0;       ///< records of this run received (including duplicates)
  long duplicates = 0;     ///< records of this run received more than once
  long out_of_order = 0;   ///< first deliveries below an earlier seq on the same partition
  long misplaced = 0;      ///< partition/offset differs from the delivery report
  long unexpected = 0;     ///< records that must not be visible (aborted) or were never acked
  long redelivered = 0;    ///< share groups: records with delivery count > 1
  long consume_errors = 0; ///< error events/messages seen by the consumer
  long ack_failures = 0;   ///< share groups: acknowledgements the broker did not accept
};

/// Thread-safe record of a run. Sequence numbers are 0-based, dense.
class RunLedger {
 public:
  explicit RunLedger(std::string run_id) : run_id_(std::move(run_id)) {}

  const std::string& run_id() const { return run_id_; }
  /// Value prefix that marks this run's records: "eg:<run_id>:".
  std::string prefix() const { return "eg:" + run_id_ + ":"; }

  /// Registers a message about to be produced; returns its seq.
  long add_sent(int64_t send_us);
  /// Drops the last registered message (producev refused it).
  void unsend_last();
  /// Delivery report for `seq`.
  void report(long seq, int error, int32_t partition, int64_t offset, int32_t broker,
              int64_t ack_us);

  /// Marks production finished; `visible` false means consumers must not see
  /// any of the run's data records (aborted transaction).
  void finish_producing(bool visible, int partitions_with_markers);
  bool producing_done() const;

  /// Consumer side: one record of this run (seq >= 0) on partition/offset.
  /// `delivery_count` > 1 marks a share-group redelivery.
  void consumed(long seq, int32_t partition, int64_t offset, int delivery_count);
  /// Consumer side: the end-of-run marker for `partition` arrived.
  void marker_seen(int32_t partition);
  void consume_error(const std::string& error);
  /// Share groups: `records` acknowledgements failed with `error`.
  void ack_failure(long records, const std::string& error);

  /// True when the consumer has everything it needs: production done, every
  /// marker seen (when markers are used) and every acked seq received.
  bool consume_complete() const;
  /// True when markers were written and the consumer saw every one of them.
  bool markers_complete() const;

  long sent() const;
  long acked() const;
  long failed() const;
  long missing() const;  ///< acked (and visible) seqs never consumed
  ConsumeCounts counts() const;
  std::string first_error() const;
  void set_first_error(const std::string& error);
  /// Time (ms) the warm-up records took to be acknowledged.
  void set_warmup_ms(double ms);
  double warmup_ms() const;
  /// Delivery latencies (µs) of acked messages.
  std::vector<int64_t> latencies_us() const;
  std::map<int32_t, long> acked_by_partition() const;
  std::map<int32_t, long> acked_by_broker() const;
  /// Writes the per-message CSV (one row per seq: the delivery report, the
  /// first receipt's time, partition and offset, and how many times it was
  /// received); false when the file cannot be written.
  bool write_timeline(const std::string& path) const;

 private:
  mutable std::mutex mutex_;
  std::string run_id_;
  std::vector<SentMessage> sent_;
  std::vector<int> received_;               // per seq: times consumed
  std::map<int32_t, long> last_seq_;        // per partition: highest first-delivered seq
  std::map<int32_t, bool> markers_;         // partitions whose marker arrived
  int expected_markers_ = 0;
  bool done_ = false;
  bool visible_ = true;
  long acked_ = 0;
  long failed_ = 0;
  ConsumeCounts counts_;
  std::string first_error_;
  double warmup_ms_ = 0;
};

}  // namespace epochgate::peers
