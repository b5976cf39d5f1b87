// bench/kafka_load: leader moves under steady produce.
#include "leader_move.h"

#include <librdkafka/rdkafka.h>

#include "client_load.h"

namespace epochgate::bench {

bool query_leaders(const std::string& bootstrap, const std::string& topic, LeaderTable* table,
                   std::string* error) {
  char errstr[256];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (rk == nullptr) {
    *error = errstr;
    rd_kafka_conf_destroy(conf);
    return false;
  }
  rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, t, &md, 5000);
  bool ok = false;
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR || md == nullptr || md->topic_cnt != 1) {
    *error = std::string("metadata: ") + rd_kafka_err2name(err);
  } else {
    const rd_kafka_metadata_topic_t& mt = md->topics[0];
    table->leader.assign(static_cast<size_t>(mt.partition_cnt), -1);
    for (int i = 0; i < mt.partition_cnt; ++i) {
      const auto& p = mt.partitions[i];
      if (p.id >= 0 && p.id < mt.partition_cnt) table->leader[static_cast<size_t>(p.id)] = p.leader;
    }
    ok = true;
  }
  if (md) rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(t);
  rd_kafka_destroy(rk);
  return ok;
}

LeaderMoveResult run_leader_moves(const LeaderMoveSpec& spec) {
  LeaderMoveResult result;
  struct Active {
    MoveOutcome outcome;
    long long t0 = 0;
    LatencySamples moved;
  };
  std::vector<Active> moves(static_cast<size_t>(spec.moves));
  int next_move = 0;
  std::string move_error;
  const long long window_ns = static_cast<long long>(spec.after_move_seconds * 1e9);

  ProduceSpec ps;
  ps.bootstrap = spec.bootstrap;
  ps.topic = spec.topic;
  ps.partitions = spec.partitions;
  ps.acks = "all";
  ps.idempotent = true;
  ps.rate = spec.rate;
  ps.retry_backoff_ms = spec.retry_backoff_ms;
  ps.seconds = spec.warm_seconds + spec.moves * spec.after_move_seconds;
  ps.on_tick = [&](double elapsed) {
    if (next_move >= spec.moves) return;
    if (elapsed < spec.warm_seconds + next_move * spec.after_move_seconds) return;
    Active& a = moves[static_cast<size_t>(next_move++)];
    LeaderTable& table = *spec.leaders;
    const int32_t p = static_cast<int32_t>((table.moves_done++ * 5) % spec.partitions);
    a.outcome.partition = p;
    a.outcome.from = table.leader[static_cast<size_t>(p)];
    a.outcome.to = a.outcome.from % spec.brokers + 1;
    a.t0 = steady_ns();
    if (!spec.cluster->set_leader(p, a.outcome.to)) move_error = "set_leader failed";
    table.leader[static_cast<size_t>(p)] = a.outcome.to;
  };
  ps.on_delivery = [&](const DeliveryEvent& ev) {
    bool counted = false;  // windows may touch: count each message once
    for (int i = 0; i < next_move; ++i) {
      Active& a = moves[static_cast<size_t>(i)];
      if (ev.done_ns < a.t0 || ev.sent_ns >= a.t0 + window_ns) continue;
      const long long lat = ev.done_ns - ev.sent_ns;
      if (!counted) result.window_all.add_ns(lat);
      counted = true;
      if (ev.partition != a.outcome.partition) continue;
      a.moved.add_ns(lat);
      if (!a.outcome.recovered && ev.ok && ev.broker_id == a.outcome.to) {
        a.outcome.recovered = true;
        a.outcome.recovery_ms = static_cast<double>(ev.done_ns - a.t0) / 1e6;
      }
    }
  };
  ProduceResult pr = run_produce(ps);
  result.delivered = pr.delivered;
  result.failed = pr.failed;
  for (Active& a : moves) {
    a.outcome.moved_p99_ms = a.moved.percentile(99) / 1000.0;
    a.outcome.moved_max_ms = a.moved.max() / 1000.0;
    result.window_moved.merge(a.moved);
    result.moves.push_back(a.outcome);
  }
  result.error = !move_error.empty() ? move_error : pr.error;
  result.ok = pr.ok && move_error.empty() && next_move == spec.moves;
  if (result.ok) {
    for (const auto& m : result.moves) {
      if (!m.recovered) {
        result.ok = false;
        result.error = "partition " + std::to_string(m.partition) + " never recovered";
      }
    }
  }
  return result;
}

}  // namespace epochgate::bench
