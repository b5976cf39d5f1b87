// bench/codec_bench.cc: decode (and re-encode) cost of the generated codec on
// large frames: a Produce v9 request of 100 partitions x 16 KiB record batches
// and a Metadata v12 response of 1,000 partitions. Reports time per frame and
// frame bytes/s. Not a test: nothing here asserts a speed.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codec/messages/all.h"

namespace epochgate::codec {
namespace {

std::vector<uint8_t> produce_v9_body(std::vector<uint8_t>& record_store) {
  constexpr int kPartitions = 100;
  constexpr size_t kBatch = 16 * 1024;
  record_store.assign(kPartitions * kBatch, 0);
  for (size_t i = 0; i < record_store.size(); ++i) record_store[i] = static_cast<uint8_t>(i * 131);
  ProduceRequest req;
  req.acks = -1;
  req.timeout_ms = 30000;
  auto& topic = req.topic_data.emplace_back();
  topic.name = "bench-topic";
  for (int p = 0; p < kPartitions; ++p) {
    auto& part = topic.partition_data.emplace_back();
    part.index = p;
    part.records = Bytes{record_store.data() + p * kBatch, static_cast<uint32_t>(kBatch), false};
  }
  std::vector<uint8_t> body;
  Writer w(body);
  req.encode(w, 9);
  return body;
}

std::vector<uint8_t> metadata_v12_body() {
  MetadataResponse resp;
  for (int b = 0; b < 3; ++b)
    resp.brokers.push_back({b, "broker-" + std::to_string(b) + ".kafka.internal", 9092,
                            "rack-" + std::to_string(b), {}});
  resp.cluster_id = "bench-cluster";
  resp.controller_id = 0;
  for (int t = 0; t < 10; ++t) {
    auto& topic = resp.topics.emplace_back();
    topic.name = "topic-" + std::to_string(t);
    topic.topic_id[0] = static_cast<uint8_t>(t + 1);
    for (int p = 0; p < 100; ++p) {
      auto& part = topic.partitions.emplace_back();
      part.partition_index = p;
      part.leader_id = p % 3;
      part.leader_epoch = 7 + p;
      part.replica_nodes = {p % 3, (p + 1) % 3, (p + 2) % 3};
      part.isr_nodes = part.replica_nodes;
    }
  }
  std::vector<uint8_t> body;
  Writer w(body);
  resp.encode(w, 12);
  return body;
}

template <class M>
void run_decode(benchmark::State& state, const std::vector<uint8_t>& body, int16_t version) {
  M m;
  for (auto _ : state) {
    Status s = decode_body(body.data(), body.size(), version, m);
    if (!s.ok()) state.SkipWithError(s.message().c_str());
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(body.size()));
  state.counters["frame_bytes"] = static_cast<double>(body.size());
}

template <class M>
void run_encode(benchmark::State& state, const std::vector<uint8_t>& body, int16_t version) {
  M m;
  if (!decode_body(body.data(), body.size(), version, m).ok()) state.SkipWithError("decode");
  std::vector<uint8_t> out;
  out.reserve(body.size());
  for (auto _ : state) {
    out.clear();
    Writer w(out);
    m.encode(w, version);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(body.size()));
  state.counters["frame_bytes"] = static_cast<double>(body.size());
}

void BM_DecodeProduceV9_100x16KiB(benchmark::State& state) {
  std::vector<uint8_t> records;
  std::vector<uint8_t> body = produce_v9_body(records);
  run_decode<ProduceRequest>(state, body, 9);
}
BENCHMARK(BM_DecodeProduceV9_100x16KiB);

void BM_DecodeMetadataV12_1000Partitions(benchmark::State& state) {
  run_decode<MetadataResponse>(state, metadata_v12_body(), 12);
}
BENCHMARK(BM_DecodeMetadataV12_1000Partitions);

void BM_EncodeProduceV9_100x16KiB(benchmark::State& state) {
  std::vector<uint8_t> records;
  std::vector<uint8_t> body = produce_v9_body(records);
  run_encode<ProduceRequest>(state, body, 9);
}
BENCHMARK(BM_EncodeProduceV9_100x16KiB);

void BM_EncodeMetadataV12_1000Partitions(benchmark::State& state) {
  run_encode<MetadataResponse>(state, metadata_v12_body(), 12);
}
BENCHMARK(BM_EncodeMetadataV12_1000Partitions);

}  // namespace
}  // namespace epochgate::codec

BENCHMARK_MAIN();
