// fuzz/seed_corpus.cc: writes the seed corpus of every fuzz target from real
// frames (tests/codec/golden, captured from librdkafka, kcat and
// kafka-python) and from the codec's sample message of every API version,
// each in the input format its target documents. Test tooling only: reads
// the golden folder, writes under --out, never touches the network.
//
// Usage: fuzz_seed_corpus --golden tests/codec/golden --out build-fuzz/fuzz/seeds
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "codec/api_table.h"
#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/all.h"
#include "codec/messages/test_samples.h"

namespace fs = std::filesystem;
namespace ec = epochgate::codec;

namespace {

using Bytes = std::vector<uint8_t>;

struct Frame {
  std::string name;  // source_api_version_n
  bool request;
  int16_t key;
  int16_t version;
  Bytes whole;  // size prefix included
};

fs::path g_out;
size_t g_written = 0;

void write_seed(const std::string& target, const std::string& name, const Bytes& b) {
  fs::path dir = g_out / target;
  fs::create_directories(dir);
  std::ofstream f(dir / name, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  ++g_written;
}

void be16(Bytes& b, int16_t v) {
  b.push_back(static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

Bytes payload(const Frame& f) { return Bytes(f.whole.begin() + 4, f.whole.end()); }

void step(Bytes& script, uint8_t kind, const Bytes& p) {
  script.push_back(kind);
  size_t n = p.size() > 0xffff ? 0xffff : p.size();
  script.push_back(static_cast<uint8_t>(n >> 8));
  script.push_back(static_cast<uint8_t>(n));
  script.insert(script.end(), p.begin(), p.begin() + static_cast<ptrdiff_t>(n));
}

// Per-frame seeds for the decode, headers and splitter targets.
void single_frame_seeds(const Frame& f) {
  Bytes d;
  d.push_back(f.request ? 0 : 1);
  be16(d, f.request ? 0 : f.key);
  be16(d, f.request ? 0 : f.version);
  Bytes p = payload(f);
  d.insert(d.end(), p.begin(), p.end());
  write_seed("fuzz_decode", f.name, d);

  Bytes h;
  h.push_back(static_cast<uint8_t>(f.request ? 0 : ec::response_header_version(f.key, f.version)));
  h.insert(h.end(), p.begin(), p.end());
  write_seed("fuzz_headers", f.name, h);

  Bytes s = {6, 1, 2, 3, 5, 8, 13, 21, 34};  // max 1 MiB, varied chunk sizes
  s.insert(s.end(), f.whole.begin(), f.whole.end());
  s.insert(s.end(), f.whole.begin(), f.whole.end());
  write_seed("fuzz_frame_splitter", f.name, s);
}

// The records of every partition of a Produce request, for fuzz_record_batch.
void record_batch_seeds(const Frame& f) {
  if (!f.request || f.key != ec::kProduce) return;
  ec::RequestHeader h;
  if (!ec::parse_request_header(f.whole.data() + 4, f.whole.size() - 4, h).ok()) return;
  ec::ProduceRequest m;
  if (!ec::decode_body(f.whole.data() + 4 + h.size, f.whole.size() - 4 - h.size, f.version, m)
           .ok()) {
    return;
  }
  int n = 0;
  for (const auto& t : m.topic_data) {
    for (const auto& p : t.partition_data) {
      if (p.records.is_null) continue;
      write_seed("fuzz_record_batch", f.name + "_" + std::to_string(n++),
                 Bytes(p.records.data, p.records.data + p.records.size));
    }
  }
}

// A request and its response as a client/broker script.
void session_seeds(const std::string& name, const Frame& req, const Frame* resp) {
  for (uint8_t opts : {uint8_t{0}, uint8_t{1}, uint8_t{2}}) {
    std::string n = name + "_o" + std::to_string(opts);
    Bytes c;
    c.push_back(opts);
    c.insert(c.end(), req.whole.begin(), req.whole.end());
    write_seed("fuzz_session_client", n, c);
    // The requests a client sends before it has logged in: ApiVersions,
    // SaslHandshake, SaslAuthenticate (fuzz_pre_auth, same input layout).
    if (req.key == 18 || req.key == 17 || req.key == 36) write_seed("fuzz_pre_auth", n, c);
    if (resp == nullptr) continue;
    Bytes b;
    b.push_back(opts);
    step(b, 0, payload(req));
    Bytes rest(resp->whole.begin() + 8, resp->whole.end());  // without size and correlation id
    step(b, 1, rest);
    write_seed("fuzz_session_broker", n, b);
  }
}

bool read_file(const fs::path& p, Bytes& out) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

template <class M>
void sample_frames(std::vector<Frame>& out) {
  for (int16_t v = M::kMinVersion; v <= M::kMaxVersion; ++v) {
    M m;
    ec::testing::fill_sample(m, v);
    Frame f;
    f.request = M::kIsRequest;
    f.key = M::kApiKey;
    f.version = v;
    f.name = std::string("sample_") + M::kName + "_v" + std::to_string(v);
    if constexpr (M::kIsRequest) {
      ec::RequestHeader h;
      h.api_key = M::kApiKey;
      h.api_version = v;
      h.correlation_id = 7;
      h.client_id = "fuzz-seed";
      ec::encode_frame(f.whole, h, m, v);
    } else {
      ec::ResponseHeader h;
      h.correlation_id = 7;
      ec::encode_frame(f.whole, h, m, v);
    }
    out.push_back(std::move(f));
  }
}

}  // namespace

int main(int argc, char** argv) {
  fs::path golden;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--golden") golden = argv[i + 1];
    if (a == "--out") g_out = argv[i + 1];
  }
  if (golden.empty() || g_out.empty()) {
    std::fprintf(stderr, "usage: %s --golden DIR --out DIR\n", argv[0]);
    return 2;
  }

  std::vector<Frame> frames;
  std::ifstream manifest(golden / "manifest.txt");
  if (!manifest) {
    std::fprintf(stderr, "cannot read %s\n", (golden / "manifest.txt").c_str());
    return 1;
  }
  std::string line;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string file, direction, source;
    int key = 0, version = 0;
    if (!(in >> file >> direction >> key >> version >> source)) continue;
    Frame f;
    if (!read_file(golden / file, f.whole) || f.whole.size() < 8) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 1;
    }
    f.request = direction == "request";
    f.key = static_cast<int16_t>(key);
    f.version = static_cast<int16_t>(version);
    f.name = "golden_" + fs::path(file).parent_path().string() + "_" + fs::path(file).stem().string();
    frames.push_back(std::move(f));
  }
  // First Produce requests of idempotent, transactional and plain producers
  // (golden/record_batches/manifest.txt: file, Produce version, ...).
  std::ifstream batches(golden / "record_batches" / "manifest.txt");
  while (std::getline(batches, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string file;
    int version = 0;
    if (!(in >> file >> version)) continue;
    Frame f;
    if (!read_file(golden / "record_batches" / file, f.whole) || f.whole.size() < 8) continue;
    f.request = true;
    f.key = ec::kProduce;
    f.version = static_cast<int16_t>(version);
    f.name = "batch_" + fs::path(file).stem().string();
    record_batch_seeds(f);
  }
  size_t golden_count = frames.size();
  std::apply([&](auto... m) { (sample_frames<decltype(m)>(frames), ...); }, ec::AllMessages{});

  // Responses by (api, version, origin), to pair with requests.
  std::map<std::tuple<int16_t, int16_t, bool>, const Frame*> responses;
  for (size_t i = 0; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    if (!f.request) responses.emplace(std::make_tuple(f.key, f.version, i < golden_count), &f);
  }
  for (size_t i = 0; i < frames.size(); ++i) {
    const Frame& f = frames[i];
    single_frame_seeds(f);
    record_batch_seeds(f);
    if (!f.request) continue;
    auto it = responses.find(std::make_tuple(f.key, f.version, i < golden_count));
    session_seeds(f.name, f, it == responses.end() ? nullptr : it->second);
  }

  // One whole conversation per golden source: every request it sent, pipelined.
  std::map<std::string, Bytes> by_source;
  for (size_t i = 0; i < golden_count; ++i) {
    const Frame& f = frames[i];
    if (!f.request) continue;
    std::string source = f.name.substr(0, f.name.find("_req_"));
    Bytes& b = by_source[source];
    if (b.empty()) b.push_back(0);
    b.insert(b.end(), f.whole.begin(), f.whole.end());
  }
  for (const auto& [source, b] : by_source) write_seed("fuzz_session_client", source + "_all", b);

  std::printf("wrote %zu seeds (%zu golden frames, %zu sample frames) under %s\n", g_written,
              golden_count, frames.size() - golden_count, g_out.c_str());
  return 0;
}
