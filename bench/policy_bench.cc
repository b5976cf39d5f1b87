// bench/policy_bench.cc: cost of the fencing decision:
// partition decisions per second on one core, for a Produce request naming
// 1,000 partitions against a view of 10,000 partitions (100 topics x 100
// partitions, 5 brokers), plus a Fetch with epoch injection and a split
// Produce with its local answer; and at scale, a Produce naming 10,000
// partitions against a view of 100,000 (100 topics x 1,000), learning that
// view, and the allocator's count of its memory. Prints figures, asserts
// nothing.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <memory>
#include <string>
#include <vector>

#include "codec/messages/fetch_request.h"
#include "codec/messages/metadata_response.h"
#include "codec/messages/produce_request.h"
#include "policy/answer.h"
#include "policy/compiled_policy.h"
#include "policy/decide.h"
#include "policy/metadata_view.h"

namespace {

using namespace epochgate;

constexpr int kTopics = 100;
constexpr int kPartitionsPerTopic = 100;
constexpr int kBrokers = 5;
constexpr uint64_t kNow = 2000;

std::string topic_name(int t) {
  return "bench-topic-" + std::to_string(t);
}
int32_t leader_of(int t, int p) {
  return (t + p) % kBrokers + 1;
}

codec::Uuid topic_id(int t) {
  codec::Uuid u{};
  u[0] = static_cast<uint8_t>(t + 1);
  u[15] = 0x42;
  return u;
}

codec::MetadataResponse metadata_of(int topics, int partitions_per_topic) {
  codec::MetadataResponse md;
  for (int b = 1; b <= kBrokers; ++b)
    md.brokers.push_back({b, "broker-" + std::to_string(b), 9092, std::nullopt, {}});
  for (int t = 0; t < topics; ++t) {
    auto& mt = md.topics.emplace_back();
    mt.name = topic_name(t);
    mt.topic_id = topic_id(t);
    for (int p = 0; p < partitions_per_topic; ++p) {
      auto& mp = mt.partitions.emplace_back();
      mp.partition_index = p;
      mp.leader_id = leader_of(t, p);
      mp.leader_epoch = 10 + p % 7;
      for (int r = 0; r < 3; ++r)
        mp.replica_nodes.push_back((leader_of(t, p) + r - 1) % kBrokers + 1);
      mp.isr_nodes = mp.replica_nodes;
    }
  }
  return md;
}

codec::MetadataResponse metadata_10000() { return metadata_of(kTopics, kPartitionsPerTopic); }

/// The 10,000-partition view, learned once from one Metadata v12 response.
policy::MetadataView& bench_view() {
  static policy::MetadataView* view = [] {
    auto* v = new policy::MetadataView();
    v->learn_metadata(metadata_10000(), 12, 1000, policy::Source::kRefresher);
    return v;
  }();
  return *view;
}

constexpr int kScalePartitionsPerTopic = 1000;  // x kTopics = 100,000

/// The 100,000-partition view (100 topics x 1,000), learned once.
policy::MetadataView& bench_view_100k() {
  static policy::MetadataView* view = [] {
    auto* v = new policy::MetadataView();
    v->learn_metadata(metadata_of(kTopics, kScalePartitionsPerTopic), 12, 1000,
                      policy::Source::kRefresher);
    return v;
  }();
  return *view;
}

/// A Produce v9 naming the `count` partitions broker 1 leads first, drawn
/// from the 100,000-partition cluster.
codec::ProduceRequest produce_led_by_1(int count) {
  static const uint8_t kRecords[64] = {};
  codec::ProduceRequest r;
  r.acks = -1;
  r.timeout_ms = 30000;
  int named = 0;
  for (int t = 0; t < kTopics && named < count; ++t) {
    auto& td = r.topic_data.emplace_back();
    td.name = topic_name(t);
    for (int p = 0; p < kScalePartitionsPerTopic && named < count; ++p) {
      if (leader_of(t, p) != 1) continue;
      auto& pd = td.partition_data.emplace_back();
      pd.index = p;
      pd.records = codec::Bytes{kRecords, sizeof kRecords, false};
      ++named;
    }
  }
  return r;
}

/// A Produce v9 naming 1,000 partitions (10 topics x 100). `only_led_by`
/// >= 1 keeps only partitions that broker leads (then 1,000 partitions are
/// drawn from more topics); 0 takes every partition of 10 topics.
codec::ProduceRequest produce_1000(int only_led_by) {
  static const uint8_t kRecords[64] = {};
  codec::ProduceRequest r;
  r.acks = -1;
  r.timeout_ms = 30000;
  int named = 0;
  for (int t = 0; t < kTopics && named < 1000; ++t) {
    auto& td = r.topic_data.emplace_back();
    td.name = topic_name(t);
    for (int p = 0; p < kPartitionsPerTopic && named < 1000; ++p) {
      if (only_led_by > 0 && leader_of(t, p) != only_led_by) continue;
      auto& pd = td.partition_data.emplace_back();
      pd.index = p;
      pd.records = codec::Bytes{kRecords, sizeof kRecords, false};
      ++named;
    }
  }
  return r;
}

codec::FetchRequest fetch_1000() {
  codec::FetchRequest r;
  int named = 0;
  for (int t = 0; t < kTopics && named < 1000; ++t) {
    auto& ft = r.topics.emplace_back();
    ft.topic_id = topic_id(t);
    for (int p = 0; p < kPartitionsPerTopic && named < 1000; ++p, ++named) {
      auto& fp = ft.partitions.emplace_back();
      fp.partition = p;
      fp.current_leader_epoch = -1;
      fp.fetch_offset = 1000;
      fp.partition_max_bytes = 1 << 20;
    }
  }
  return r;
}

template <class Request>
void run_decisions(benchmark::State& state, const Request& req, int16_t version, int32_t target,
                   policy::MetadataView& view = bench_view()) {
  const auto policy = policy::CompiledPolicy::compile(config::PolicyConfig{});
  policy::RequestDecision out;
  size_t partitions = 0;
  for (auto _ : state) {
    auto snap = view.snapshot();  // per request, as a session does
    policy::DecideContext ctx{*snap, policy, target, kNow, true};
    policy::decide(req, version, ctx, out);
    benchmark::DoNotOptimize(out.action);
    partitions = out.partitions.size();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * partitions));
  state.counters["partitions_per_request"] = static_cast<double>(partitions);
  state.counters["fenced"] = static_cast<double>(out.fenced);
  state.SetLabel(policy::action_name(out.action));
}

// Every partition led by the target: all pass (the steady state).
void BM_DecideProduce1000_AllPass(benchmark::State& state) {
  run_decisions(state, produce_1000(1), 9, 1);
}
BENCHMARK(BM_DecideProduce1000_AllPass);

// A Produce naming 10,000 partitions, all led by the target, against the
// 100,000-partition view: the decision time per request at scale.
void BM_DecideProduce10000_AllPass_View100000(benchmark::State& state) {
  run_decisions(state, produce_led_by_1(10000), 9, 1, bench_view_100k());
}
BENCHMARK(BM_DecideProduce10000_AllPass_View100000);

// 10 topics x 100 partitions to broker 1: 80% fenced (split).
void BM_DecideProduce1000_Mixed(benchmark::State& state) {
  run_decisions(state, produce_1000(0), 9, 1);
}
BENCHMARK(BM_DecideProduce1000_Mixed);

// Fetch v13 by topic id with CurrentLeaderEpoch -1 to a bootstrap target:
// 1,000 epoch injections.
void BM_DecideFetch1000_Inject(benchmark::State& state) {
  run_decisions(state, fetch_1000(), 13, -1);
}
BENCHMARK(BM_DecideFetch1000_Inject);

// The whole split path for the mixed Produce: decide, rewrite the forwarded
// request, build the local answer (800 fenced partitions with hints).
class NoEndpoints : public policy::EndpointResolver {
 public:
  std::optional<policy::AdvertisedEndpoint> advertised(int32_t node) const override {
    return policy::AdvertisedEndpoint{"epochgate", 19000 + node};
  }
};

void BM_SplitProduce1000_DecideRewriteAnswer(benchmark::State& state) {
  auto& view = bench_view();
  const auto policy = policy::CompiledPolicy::compile(config::PolicyConfig{});
  const auto req = produce_1000(0);
  NoEndpoints endpoints;
  policy::RequestDecision d;
  for (auto _ : state) {
    auto snap = view.snapshot();
    policy::DecideContext ctx{*snap, policy, 1, kNow, true};
    policy::decide(req, 10, ctx, d);
    auto fwd = policy::rewrite_request(req, 10, d);
    auto local = policy::build_local_response(req, 10, d, *snap, endpoints);
    benchmark::DoNotOptimize(fwd);
    benchmark::DoNotOptimize(local);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * d.partitions.size()));
}
BENCHMARK(BM_SplitProduce1000_DecideRewriteAnswer);

// Learning a refresher answer for the whole 10,000-partition cluster (nothing
// changed: every entry confirmed, a new snapshot published).
void BM_LearnMetadata10000(benchmark::State& state) {
  policy::MetadataView view;
  const auto md = metadata_10000();
  uint64_t now = 1000;
  view.learn_metadata(md, 12, now, policy::Source::kRefresher);
  for (auto _ : state) view.learn_metadata(md, 12, ++now, policy::Source::kRefresher);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kTopics * kPartitionsPerTopic));
}
BENCHMARK(BM_LearnMetadata10000);

// A refresher answer for the whole 100,000-partition cluster (nothing
// changed): the view's share of one periodic refresh at scale.
void BM_LearnMetadata100000(benchmark::State& state) {
  policy::MetadataView view;
  const auto md = metadata_of(kTopics, kScalePartitionsPerTopic);
  uint64_t now = 1000;
  view.learn_metadata(md, 12, now, policy::Source::kRefresher);
  for (auto _ : state) view.learn_metadata(md, 12, ++now, policy::Source::kRefresher);
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * kTopics * kScalePartitionsPerTopic));
}
BENCHMARK(BM_LearnMetadata100000)->Unit(benchmark::kMillisecond);

// What the view holds for 100,000 partitions, by the allocator's count
// (mallinfo2: bytes in use after learning minus before; the decoded response
// is alive in both, so it is not counted): the bytes_per_partition label.
void BM_ViewMemory100000(benchmark::State& state) {
  const auto md = metadata_of(kTopics, kScalePartitionsPerTopic);
  double per_partition = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto view = std::make_unique<policy::MetadataView>();
    malloc_trim(0);
    const size_t before = mallinfo2().uordblks;
    state.ResumeTiming();
    view->learn_metadata(md, 12, 1000, policy::Source::kRefresher);
    state.PauseTiming();
    const size_t after = mallinfo2().uordblks;
    per_partition = static_cast<double>(after - before) / (kTopics * kScalePartitionsPerTopic);
    view.reset();
    state.ResumeTiming();
  }
  // A label, not a counter: Google Benchmark's CSV reporter aborts on a
  // counter name the first benchmark did not have.
  state.SetLabel("bytes_per_partition=" + std::to_string(per_partition));
}
BENCHMARK(BM_ViewMemory100000)->Iterations(3)->Unit(benchmark::kMillisecond);

// A hint for one partition while the view holds 10,000 (copy-on-write cost).
void BM_LearnOneHint(benchmark::State& state) {
  policy::MetadataView view;
  view.learn_metadata(metadata_10000(), 12, 1000, policy::Source::kRefresher);
  int32_t epoch = 100;
  for (auto _ : state)
    view.learn_current_leader(policy::TopicRef{topic_name(7), {}}, 3, 2, ++epoch, 2000,
                              policy::Source::kHint);
}
BENCHMARK(BM_LearnOneHint);

}  // namespace

BENCHMARK_MAIN();
