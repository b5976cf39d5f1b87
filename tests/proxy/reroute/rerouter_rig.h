// tests/proxy/reroute/rerouter_rig.h: one worker's Rerouter on a real libuv
// loop (its wait timer) with every leader played by the test through
// FakeBrokerClients (tests/proxy/lib/fake_broker_client.h), the view by a
// table of leaders, and the listeners by fixed addresses. Builds plans and
// requests the way the session does (a local NOT_LEADER_OR_FOLLOWER answer
// for every target) and reads back what the client would get. Test tooling
// only; nothing here sleeps or reads a clock.
#pragma once

#include <uv.h>

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "codec/header.h"
#include "codec/kafka_errors.h"
#include "codec/message_io.h"
#include "codec/messages/produce_request.h"
#include "codec/messages/produce_response.h"
#include "config/config.h"
#include "proxy/core/endpoint_mapper.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/in_flight_request.h"
#include "proxy/core/reroute_plan.h"
#include "proxy/core/reroute_state.h"
#include "proxy/core/worker_context.h"
#include "proxy/reroute/rerouter.h"
#include "tests/proxy/lib/fake_broker_client.h"

namespace epochgate::proxy::testing {

/// The view's leaders, by topic name and partition; counts refresh requests.
class LeaderTable final : public FencingHooks {
 public:
  void set(const std::string& topic, int32_t partition, int32_t leader, int32_t epoch) {
    leaders_[{topic, partition}] = {leader, epoch};
  }
  void forget(const std::string& topic, int32_t partition) { leaders_.erase({topic, partition}); }
  int refreshes = 0;

  bool leader_of(std::string_view topic, const codec::Uuid&, int32_t partition, int32_t& leader,
                 int32_t& epoch, bool refresh) override {
    if (refresh) ++refreshes;
    auto it = leaders_.find({std::string(topic), partition});
    if (it == leaders_.end()) return false;
    leader = it->second.first;
    epoch = it->second.second;
    return true;
  }
  RequestPlan plan_request(const RequestInput&) override { return {}; }
  void learn_response(PolicyResponse, int16_t, int32_t) override {}
  bool amend_response(InFlightEntry&, PolicyResponse, int16_t, int32_t) override { return false; }

 private:
  std::map<std::pair<std::string, int32_t>, std::pair<int32_t, int32_t>> leaders_;
};

/// Node n's broker is "broker-n:9092"; epochgate's listener for it "epochgate:(9000+n)".
class FixedNodes final : public UpstreamDirectory, public EndpointMapper {
 public:
  std::optional<config::HostPort> upstream_of(int32_t node_id) const override {
    return config::HostPort{"broker-" + std::to_string(node_id), 9092};
  }
  std::vector<config::HostPort> bootstrap() const override { return {{"broker-0", 9092}}; }
  void request_refresh(const char*) override {}
  bool advertise(int32_t node_id, std::string_view, int32_t, AdvertisedAddress& out) override {
    out.host = "epochgate";
    out.port = 9000 + node_id;
    return true;
  }
};

/// One partition write of a Produce request, as the plan names it.
struct Write {
  int32_t partition = 0;
  /// >= 0: epochgate reroutes it to this leader; -1: forwarded to `node`.
  int32_t leader = -1;
  int32_t node = 1;  ///< the broker of the client's listener (forwarded writes)
  int32_t epoch = 5;  ///< the view's epoch for `leader` when the plan was made
  int64_t producer_id = -1;
  std::string topic = "t";
};

/// One client request owed an answer, as its session holds it.
struct Request {
  InFlightRequest entry;
  std::shared_ptr<ReroutePlan> plan;
  std::shared_ptr<RerouteSink> sink = std::make_shared<RerouteSink>();
  policy::Ticket ticket = 0;
  int flushes = 0;
  int reoffers = 0;
  int upstream_part = -1;  ///< the broker's part (forwarded writes), -1: none
};

/// What the client gets for one partition.
struct PartitionResult {
  int16_t error = -1;
  int64_t base_offset = -1;
  bool has_current_leader = false;
};

class RerouterRig {
 public:
  explicit RerouterRig(config::Config cfg = {}) {
    uv_loop_init(&loop_);
    ctx.loop = &loop_;
    ctx.config = std::make_shared<const config::Config>(std::move(cfg));
    ctx.upstreams = &nodes;
    ctx.endpoints = &nodes;
    ctx.fencing = &view;
    rerouter = std::make_unique<Rerouter>(ctx, &brokers);
    ctx.rerouter = rerouter.get();
  }
  ~RerouterRig() {
    if (!close_called_) close();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_TRUE(closed) << "the rerouter did not finish closing";
    rerouter.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0) << "a handle was left open";
  }

  /// A plan of `writes`, each with record bytes of its own ("records-<i>").
  static std::shared_ptr<ReroutePlan> plan_of(const std::vector<Write>& writes,
                                              int16_t version = 9) {
    auto p = std::make_shared<ReroutePlan>();
    p->version = version;
    p->acks = -1;
    p->timeout_ms = 1000;
    p->client_id = "app";
    for (size_t i = 0; i < writes.size(); ++i) {
      const Write& w = writes[i];
      RerouteStream s;
      s.key.producer_id = w.producer_id;
      s.key.client = "client-1";
      s.key.topic = w.topic;
      s.key.partition = w.partition;
      RerouteTargetPart t;
      t.topic = w.topic;
      t.partition = w.partition;
      t.leader = w.leader;
      t.leader_epoch = w.leader >= 0 ? w.epoch : -1;
      std::string bytes = "records-" + std::to_string(i);
      t.records_offset = p->records.size();
      t.records_size = static_cast<uint32_t>(bytes.size());
      p->records.insert(p->records.end(), bytes.begin(), bytes.end());
      if (w.leader >= 0) {
        s.target = static_cast<int>(p->targets.size());
        p->targets.push_back(std::move(t));
        ++p->fenced;
      } else {
        s.node = w.node;
        s.spare = static_cast<int>(p->spare.size());
        p->spare.push_back(std::move(t));
      }
      p->streams.push_back(std::move(s));
    }
    return p;
  }

  /// A ProduceResponse frame (size prefix, header) answering every write of
  /// `plan`: rerouted ones NOT_LEADER_OR_FOLLOWER (epochgate's own answer),
  /// forwarded ones `forwarded_error`. The writes are of one topic.
  static codec::ProduceResponse answer_of(const ReroutePlan& plan, int16_t forwarded_error) {
    codec::ProduceResponse m;
    auto& topic = m.responses.emplace_back();
    for (const RerouteStream& s : plan.streams) {
      const RerouteTargetPart& t = s.target >= 0 ? plan.targets[static_cast<size_t>(s.target)]
                                                 : plan.spare[static_cast<size_t>(s.spare)];
      topic.name = t.topic;
      auto& part = topic.partition_responses.emplace_back();
      part.index = t.partition;
      part.error_code =
          s.target >= 0 ? static_cast<int16_t>(codec::kErrNotLeaderOrFollower) : forwarded_error;
      // A broker's refusal carries no offset (-1), as Kafka's and the
      // librdkafka mock's do for a write they never appended.
      part.base_offset = (s.target >= 0 || forwarded_error != 0) ? -1 : 7;
    }
    return m;
  }

  static codec::ResponseHeader answer_header(const ReroutePlan& plan) {
    codec::ResponseHeader h;
    h.correlation_id = 11;
    h.header_version = codec::response_header_version(0, plan.version);
    return h;
  }

  /// A ProduceResponse frame (size prefix, header) answering every write of
  /// `plan` as answer_of() does.
  static std::vector<uint8_t> answer_frame(const ReroutePlan& plan, int16_t forwarded_error) {
    std::vector<uint8_t> out;
    codec::encode_frame(out, answer_header(plan), answer_of(plan, forwarded_error), plan.version);
    return out;
  }

  /// Makes the request of `writes` the way its session would; the rerouted
  /// writes are answered locally at once, the forwarded ones wait for the
  /// broker (broker_answers()).
  /// `version`: the client's Produce version.
  std::unique_ptr<Request> request(const std::vector<Write>& writes, int16_t version = 9) {
    auto r = std::make_unique<Request>();
    r->plan = plan_of(writes, version);
    r->entry.correlation_id = 11;
    r->entry.api_key = 0;
    r->entry.api_version = r->plan->version;
    r->entry.upstream_version = r->plan->version;
    bool forwarded = false;
    for (const Write& w : writes) forwarded = forwarded || w.leader < 0;
    if (forwarded)
      r->upstream_part = r->entry.add_part(RequestPart::Source::kUpstream);
    else {
      // Every write answered locally: the plan carries the decoded answer
      // (as PolicyFencing makes it) and the entry its encoding.
      r->entry.response = answer_frame(*r->plan, 0);
      r->plan->local_answer = answer_of(*r->plan, 0);
    }
    r->entry.add_part(RequestPart::Source::kLocal);
    Request* raw = r.get();
    r->sink->flush = [raw] { ++raw->flushes; };
    r->sink->reoffer = [raw] { ++raw->reoffers; };
    return r;
  }

  /// The session starts `r`: a ticket in arrival order, then Rerouter::start.
  void start(Request& r, const char* refuse = nullptr) {
    r.ticket = rerouter->guard().arrive();
    rerouter->start(r.entry, r.plan, r.sink, r.ticket, refuse);
  }

  /// The client's broker answers `r`'s forwarded writes with `error` each.
  void broker_answers(Request& r, int16_t error) {
    r.entry.answer_part(static_cast<size_t>(r.upstream_part));
    r.entry.response = answer_frame(*r.plan, error);
    // The response pipeline leaves a rerouted Produce's answer decoded in
    // its RerouteState.
    if (r.entry.reroute) {
      r.entry.reroute->response = answer_of(*r.plan, error);
      r.entry.reroute->response_header = answer_header(*r.plan);
    }
    rerouter->after_broker_answer(r.entry);
    finish_rerouted(r.entry);
  }

  /// The client's answer to `r`, decoded (byte views into r.entry.response);
  /// nullopt until it is ready.
  static std::optional<codec::ProduceResponse> response_of(const Request& r) {
    const std::vector<uint8_t>& f = r.entry.response;
    if (!r.entry.ready || f.size() < 8) return std::nullopt;
    codec::ResponseHeader h;
    int hv = codec::response_header_version(0, r.entry.api_version);
    EXPECT_TRUE(codec::parse_response_header(f.data() + 4, f.size() - 4, hv, h).ok());
    codec::ProduceResponse m;
    EXPECT_TRUE(
        codec::decode_body(f.data() + 4 + h.size, f.size() - 4 - h.size, r.entry.api_version, m)
            .ok());
    return m;
  }

  /// The client's answer to `r`, by partition (empty until it is ready).
  static std::map<int32_t, PartitionResult> results(const Request& r) {
    std::map<int32_t, PartitionResult> out;
    std::optional<codec::ProduceResponse> m = response_of(r);
    if (!m) return out;
    for (const auto& t : m->responses)
      for (const auto& p : t.partition_responses)
        out[p.index] = PartitionResult{p.error_code, p.base_offset, p.current_leader.has_value()};
    return out;
  }

  /// A leader's answer to every partition of `call`: `error` each, base
  /// offset 100 + partition.
  static codec::ProduceResponse leader_answer(const FakeCall& call, int16_t error = 0) {
    codec::ProduceRequest req;
    EXPECT_TRUE(call.decode(req));
    codec::ProduceResponse m;
    for (const auto& td : req.topic_data) {
      auto& t = m.responses.emplace_back();
      t.name = td.name;
      t.topic_id = td.topic_id;
      for (const auto& pd : td.partition_data) {
        auto& p = t.partition_responses.emplace_back();
        p.index = pd.index;
        p.error_code = error;
        p.base_offset = error == 0 ? 100 + pd.index : -1;
      }
    }
    return m;
  }

  /// Partitions (in request order) and their record bytes in `call`.
  static std::vector<std::pair<int32_t, std::string>> partitions_of(const FakeCall& call) {
    codec::ProduceRequest req;
    EXPECT_TRUE(call.decode(req));
    std::vector<std::pair<int32_t, std::string>> out;
    for (const auto& td : req.topic_data)
      for (const auto& pd : td.partition_data)
        out.emplace_back(pd.index, std::string(pd.records.view()));
    return out;
  }

  /// Closes the rerouter (the worker stops); `closed` once it is done.
  void close() {
    close_called_ = true;
    rerouter->close([this] { closed = true; });
  }
  bool closed = false;

  /// Runs the loop's due callbacks once (the rerouter's wait timer).
  void run_once() { uv_run(&loop_, UV_RUN_NOWAIT); }
  /// Runs the loop until a callback ran (blocks for the next timer).
  void run_blocking_once() { uv_run(&loop_, UV_RUN_ONCE); }

  WorkerContext ctx;
  LeaderTable view;
  FixedNodes nodes;
  FakeBrokerClients brokers;
  std::unique_ptr<Rerouter> rerouter;

 private:
  uv_loop_t loop_;
  bool close_called_ = false;
};

/// A config with rerouting on, `max_in_flight` bounding it and leaders
/// waited for up to `max_wait_ms`.
inline config::Config reroute_config(uint32_t max_in_flight = 1024, uint32_t max_wait_ms = 150) {
  config::Config c;
  c.reroute.max_in_flight = max_in_flight;
  c.reroute.max_wait_ms = max_wait_ms;
  return c;
}

}  // namespace epochgate::proxy::testing
