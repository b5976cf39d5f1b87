// tools/peers: RunLedger bookkeeping. All state changes happen under one
// mutex; nothing here blocks on I/O except write_timeline.
#include "run_ledger.h"

#include <chrono>
#include <cstdio>

namespace epochgate::peers {

int64_t wall_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

long RunLedger::add_sent(int64_t send_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  SentMessage m;
  m.send_us = send_us;
  sent_.push_back(m);
  received_.push_back(0);
  return static_cast<long>(sent_.size()) - 1;
}

void RunLedger::unsend_last() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sent_.empty()) {
    sent_.pop_back();
    received_.pop_back();
  }
}

void RunLedger::report(long seq, int error, int32_t partition, int64_t offset, int32_t broker,
                       int64_t ack_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (seq < 0 || seq >= static_cast<long>(sent_.size())) return;
  SentMessage& m = sent_[static_cast<size_t>(seq)];
  if (m.reported) return;
  m.reported = true;
  m.error = error;
  m.partition = partition;
  m.offset = offset;
  m.broker = broker;
  m.ack_us = ack_us;
  m.acked = error == 0;
  if (m.acked) {
    ++acked_;
  } else {
    ++failed_;
  }
}

void RunLedger::finish_producing(bool visible, int partitions_with_markers) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = true;
  visible_ = visible;
  expected_markers_ = partitions_with_markers;
  // Records consumed before we learned they belong to an aborted transaction
  // were counted as consumed; they are unexpected.
  if (!visible_) {
    for (int n : received_) counts_.unexpected += n;
  }
}

bool RunLedger::producing_done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void RunLedger::consumed(long seq, int32_t partition, int64_t offset, int delivery_count) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_.consumed;
  if (delivery_count > 1) ++counts_.redelivered;
  if (seq < 0 || seq >= static_cast<long>(sent_.size())) {
    ++counts_.unexpected;
    return;
  }
  const size_t i = static_cast<size_t>(seq);
  if (done_ && !visible_) ++counts_.unexpected;
  if (++received_[i] > 1) {
    ++counts_.duplicates;
    return;
  }
  SentMessage& m = sent_[i];
  // Taken here, under the ledger's lock, right after the consumer returned
  // the record: what the application sees, for gaps across a leader move.
  m.consume_us = wall_us();
  m.consumed_partition = partition;
  m.consumed_offset = offset;
  if (m.reported && !m.acked) ++counts_.unexpected;  // a failed message became visible
  if (m.acked && (m.partition != partition || (m.offset >= 0 && m.offset != offset)))
    ++counts_.misplaced;
  auto last = last_seq_.find(partition);
  if (last != last_seq_.end() && seq < last->second) {
    ++counts_.out_of_order;
  } else {
    last_seq_[partition] = seq;
  }
}

void RunLedger::marker_seen(int32_t partition) {
  std::lock_guard<std::mutex> lock(mutex_);
  markers_[partition] = true;
}

void RunLedger::consume_error(const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_.consume_errors;
  if (first_error_.empty()) first_error_ = "consume: " + error;
}

void RunLedger::ack_failure(long records, const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  counts_.ack_failures += records;
  if (first_error_.empty()) first_error_ = "acknowledge: " + error;
}

bool RunLedger::consume_complete() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!done_) return false;
  if (static_cast<int>(markers_.size()) < expected_markers_) return false;
  if (!visible_) return true;  // nothing of the run may arrive; markers were the wait
  for (size_t i = 0; i < sent_.size(); ++i)
    if (sent_[i].acked && received_[i] == 0) return false;
  return true;
}

bool RunLedger::markers_complete() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_ && expected_markers_ > 0 && static_cast<int>(markers_.size()) >= expected_markers_;
}

long RunLedger::sent() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<long>(sent_.size());
}

long RunLedger::acked() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return acked_;
}

long RunLedger::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_;
}

long RunLedger::missing() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!visible_) return 0;
  long n = 0;
  for (size_t i = 0; i < sent_.size(); ++i)
    if (sent_[i].acked && received_[i] == 0) ++n;
  return n;
}

ConsumeCounts RunLedger::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

std::string RunLedger::first_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_error_;
}

void RunLedger::set_first_error(const std::string& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (first_error_.empty()) first_error_ = error;
}

void RunLedger::set_warmup_ms(double ms) {
  std::lock_guard<std::mutex> lock(mutex_);
  warmup_ms_ = ms;
}

double RunLedger::warmup_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return warmup_ms_;
}

std::vector<int64_t> RunLedger::latencies_us() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> out;
  out.reserve(sent_.size());
  for (const SentMessage& m : sent_)
    if (m.acked) out.push_back(m.ack_us - m.send_us);
  return out;
}

std::map<int32_t, long> RunLedger::acked_by_partition() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<int32_t, long> out;
  for (const SentMessage& m : sent_)
    if (m.acked) ++out[m.partition];
  return out;
}

std::map<int32_t, long> RunLedger::acked_by_broker() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<int32_t, long> out;
  for (const SentMessage& m : sent_)
    if (m.acked) ++out[m.broker];
  return out;
}

bool RunLedger::write_timeline(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mutex_);
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  std::fprintf(f,
               "seq,partition,offset,broker,send_us,ack_us,error,consume_us,"
               "consumed_partition,consumed_offset,received\n");
  for (size_t i = 0; i < sent_.size(); ++i) {
    const SentMessage& m = sent_[i];
    std::fprintf(f, "%zu,%d,%lld,%d,%lld,%lld,%d,%lld,%d,%lld,%d\n", i, m.partition,
                 static_cast<long long>(m.offset), m.broker, static_cast<long long>(m.send_us),
                 static_cast<long long>(m.ack_us), m.error,
                 static_cast<long long>(m.consume_us), m.consumed_partition,
                 static_cast<long long>(m.consumed_offset), received_[i]);
  }
  return std::fclose(f) == 0;
}

}  // namespace epochgate::peers
