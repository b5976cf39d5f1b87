// fuzz/session_rig.cc
#include "fuzz/session_rig.h"

#include <prometheus/registry.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "codec/api_table.h"
#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/all.h"
#include "codec/messages/test_samples.h"
#include "config/config.h"
#include "metrics/logging.h"
#include "metrics/proxy_metrics.h"
#include "policy/endpoint_resolver.h"
#include "policy/metadata_view.h"
#include "proxy/core/endpoint_mapper.h"
#include "proxy/core/worker_context.h"
#include "proxy/fencing/policy_fencing.h"
#include "proxy/net/tcp_transport.h"
#include "proxy/session/session.h"

namespace epochgate::fuzz {
namespace {

constexpr const char* kLoopback = "127.0.0.1";  // only in advertised (rewritten) addresses
constexpr int32_t kAdvertisedPortBase = 19000;

// The rig's own listeners bind a loopback address of their own (127/8 is all
// loopback on Linux), so a stranger on a busy machine that dials a recycled
// 127.0.0.1 port cannot land in a run and look like a second connection.
const std::string& rig_host() {
  static const std::string host = [] {
    unsigned pid = static_cast<unsigned>(getpid());
    return "127." + std::to_string(10 + pid % 200) + "." + std::to_string(pid / 200 % 250) + ".7";
  }();
  return host;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "session_rig: %s\n", what);
  std::abort();
}

uint64_t now_ms() { return uv_hrtime() / 1000000; }

// Process-wide: metrics registry and logging (every line formatted, then dropped).
metrics::ProxyMetrics& shared_metrics() {
  static auto registry = std::make_shared<prometheus::Registry>();
  static metrics::ProxyMetrics m(registry);
  static bool logging = [] {
    // As proxy/app/main.cc does: a write to a peer that closed must fail with
    // EPIPE, not kill the process.
    std::signal(SIGPIPE, SIG_IGN);
    metrics::LogOptions o;
    o.level = "trace";
    o.rate_limit_per_sec = 0;
    if (!metrics::configure_logging(o)) die("configure_logging failed");
    metrics::set_log_output([](std::string_view) {});
    return true;
  }();
  (void)logging;
  return m;
}

int32_t read_be32(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                              (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 24));
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

// Where upstreams are and what epochgate advertises: every node id 0..99 maps
// to the one fake broker upstream and to 127.0.0.1:19000+id downstream; other
// ids have no listener (the session must then close, never leak).
class Directory : public proxy::EndpointMapper,
                  public proxy::UpstreamDirectory,
                  public policy::EndpointResolver {
 public:
  uint16_t broker_port = 0;

  bool advertise(int32_t node_id, std::string_view, int32_t, proxy::AdvertisedAddress& out) override {
    if (node_id < 0 || node_id >= 100) return false;
    out.host = kLoopback;
    out.port = kAdvertisedPortBase + node_id;
    return true;
  }
  std::optional<config::HostPort> upstream_of(int32_t node_id) const override {
    if (node_id < 0 || node_id >= 100) return std::nullopt;
    return config::HostPort{rig_host(), broker_port};
  }
  std::vector<config::HostPort> bootstrap() const override {
    return {config::HostPort{rig_host(), broker_port}};
  }
  void request_refresh(const char*) override {}
  std::optional<policy::AdvertisedEndpoint> advertised(int32_t node_id) const override {
    if (node_id < 0 || node_id >= 100) return std::nullopt;
    return policy::AdvertisedEndpoint{kLoopback, kAdvertisedPortBase + node_id};
  }
};

// Topics the view knows before the run, so fencing has something to decide:
// "golden" (the topic of tests/codec/golden) with 3 partitions led by 1, 2, 3
// at epoch 5, and "t" with one partition led by 2 at epoch 7.
codec::MetadataResponse preload_metadata(uint16_t broker_port) {
  codec::MetadataResponse m;
  for (int32_t id = 1; id <= 3; ++id) {
    codec::MetadataResponse::MetadataResponseBroker b;
    b.node_id = id;
    b.host = rig_host();
    b.port = broker_port;
    m.brokers.push_back(b);
  }
  auto topic = [](const char* name, uint8_t id_byte, int partitions, int32_t epoch) {
    codec::MetadataResponse::MetadataResponseTopic t;
    t.name = name;
    t.topic_id.fill(id_byte);
    for (int p = 0; p < partitions; ++p) {
      codec::MetadataResponse::MetadataResponsePartition part;
      part.partition_index = p;
      part.leader_id = partitions == 1 ? 2 : 1 + p;
      part.leader_epoch = epoch;
      part.replica_nodes = {1, 2, 3};
      part.isr_nodes = {1, 2, 3};
      t.partitions.push_back(part);
    }
    return t;
  };
  m.topics.push_back(topic("golden", 0x11, 3, 5));
  m.topics.push_back(topic("t", 0x22, 1, 7));
  return m;
}

template <class M>
bool sample_response(int16_t key, int16_t version, int32_t corr, std::vector<uint8_t>& out) {
  if constexpr (M::kIsRequest) {
    return false;
  } else {
    if (M::kApiKey != key || version < M::kMinVersion || version > M::kMaxVersion) return false;
    M m;
    codec::testing::fill_sample(m, version);
    codec::ResponseHeader h;
    h.correlation_id = corr;
    codec::encode_frame(out, h, m, version);
    return true;
  }
}

bool contains_marker(const uint8_t* p, size_t n) {
  static const char kMarker[] = "Host-";
  return std::search(p, p + n, kMarker, kMarker + 5) != p + n;
}

struct WriteReq {
  uv_write_t req;
  std::vector<uint8_t> bytes;
  SessionRig* rig;
  uint64_t* progress;
};

}  // namespace

struct SessionRig::Peer {
  uv_tcp_t tcp;
  SessionRig* rig = nullptr;
  bool is_client = false;
  bool open = false;     // handle initialised
  bool closing = false;
  bool eof = false;
  std::vector<uint8_t> in;
  uint8_t scratch[64 * 1024];
};

struct SessionRig::State {
  uv_loop_t loop;
  uv_tcp_t front;        // where the client connects; accepted into the Session
  uv_tcp_t broker_listener;
  uv_timer_t guard;      // wakes uv_run for deadlines
  uv_connect_t connect_req;
  Peer client;
  Peer broker;
  Directory directory;
  policy::MetadataView view;
  std::unique_ptr<proxy::PolicyFencing> fencing;
  proxy::WorkerContext ctx;
  proxy::SessionList list;
  proxy::Session* session = nullptr;
  std::atomic<uint32_t> connections{0};
  proxy::BufferBudget budget;
  bool budget_recheck_due = false;  // the session asked to be woken when it frees up
  bool client_connected = false;
  bool broker_accepted = false;
  int extra_upstreams = 0;
  // Correlation ids of whole request frames the client sent, in order, and
  // the raw client stream (for splitting and for the address oracle).
  std::vector<uint8_t> client_stream;
  size_t client_split_at = 0;
  std::vector<int32_t> request_ids;
  size_t response_cursor = 0;
  bool marker_seen = false;  // a response to the client held "Host-"
};

namespace {

void alloc_cb(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* p = static_cast<SessionRig::Peer*>(h->data);
  buf->base = reinterpret_cast<char*>(p->scratch);
  buf->len = sizeof p->scratch;
}

}  // namespace

SessionRig::SessionRig(const RigOptions& options) : st_(std::make_unique<State>()), options_(options) {
  State& s = *st_;
  metrics::ProxyMetrics& metrics = shared_metrics();
  if (uv_loop_init(&s.loop) != 0) die("uv_loop_init");
  s.loop.data = this;
  uv_timer_init(&s.loop, &s.guard);

  // The fake broker.
  sockaddr_in addr{};
  uv_ip4_addr(rig_host().c_str(), 0, &addr);
  uv_tcp_init(&s.loop, &s.broker_listener);
  s.broker_listener.data = this;
  if (uv_tcp_bind(&s.broker_listener, reinterpret_cast<const sockaddr*>(&addr), 0) != 0 ||
      uv_listen(reinterpret_cast<uv_stream_t*>(&s.broker_listener), 16, &on_broker_connection) != 0)
    die("cannot listen for the fake broker");
  sockaddr_in bound{};
  int len = sizeof bound;
  uv_tcp_getsockname(&s.broker_listener, reinterpret_cast<sockaddr*>(&bound), &len);
  s.directory.broker_port = ntohs(bound.sin_port);

  // Config: small limits so the fuzzer reaches them.
  auto cfg = std::make_shared<config::Config>();
  cfg->limits.max_frame_bytes = options_.max_frame_bytes;
  cfg->limits.max_in_flight_per_connection = options_.max_in_flight;
  cfg->limits.high_watermark_bytes = options_.high_watermark;
  cfg->limits.low_watermark_bytes = options_.low_watermark;
  cfg->limits.upstream_connect_timeout_ms = 2000;
  cfg->refresher.enabled = false;
  if (options_.clients_must_authenticate) {
    // Never used to log in here (no refresher, not on behalf of clients).
    cfg->upstream_sasl.mechanism = "SCRAM-SHA-256";
    cfg->upstream_sasl.username = "fuzz";
    cfg->upstream_sasl.password_env = "EPOCHGATE_FUZZ_NO_PASSWORD";
  }
  std::shared_ptr<const config::Config> config = cfg;

  if (options_.fencing) {
    s.fencing = std::make_unique<proxy::PolicyFencing>(s.view, s.directory, &metrics);
    s.fencing->set_config(config);
    s.fencing->learn_metadata(preload_metadata(s.directory.broker_port), 12);
  }
  s.ctx.loop = &s.loop;
  s.ctx.config = config;
  s.ctx.metrics = &metrics;
  s.ctx.endpoints = &s.directory;
  s.ctx.upstreams = &s.directory;
  s.ctx.fencing = s.fencing.get();
  // What a worker does with its budget timer, done between loop turns here.
  s.budget.set_limit(options_.buffer_budget_bytes);
  s.ctx.budget = &s.budget;
  s.ctx.budget_recheck = [&s] { s.budget_recheck_due = true; };

  // The listener epochgate's session is accepted from.
  uv_tcp_init(&s.loop, &s.front);
  s.front.data = this;
  if (uv_tcp_bind(&s.front, reinterpret_cast<const sockaddr*>(&addr), 0) != 0 ||
      uv_listen(reinterpret_cast<uv_stream_t*>(&s.front), 16, &on_front_connection) != 0)
    die("cannot listen for the client");
  len = sizeof bound;
  uv_tcp_getsockname(&s.front, reinterpret_cast<sockaddr*>(&bound), &len);

  // The client.
  for (Peer* p : {&s.client, &s.broker}) p->rig = this;
  s.client.is_client = true;
  uv_tcp_init(&s.loop, &s.client.tcp);
  s.client.tcp.data = &s.client;
  s.client.open = true;
  s.connect_req.data = this;
  if (uv_tcp_connect(&s.connect_req, &s.client.tcp, reinterpret_cast<const sockaddr*>(&bound),
                     &on_client_connected) != 0)
    die("client connect");

  run_until([](const SessionRig& r) { return r.st_->client_connected && r.st_->broker_accepted; },
            5000);
  ready_ = s.client_connected && s.broker_accepted;
  if (!ready_) die("setup: the session never connected both sides within 5 s");
}

void SessionRig::on_client_connected(uv_connect_t* req, int status) {
  auto* rig = static_cast<SessionRig*>(req->data);
  ++rig->progress_;
  if (status != 0) die("client could not connect to the front listener");
  State& s = *rig->st_;
  s.client_connected = true;
  uv_read_start(reinterpret_cast<uv_stream_t*>(&s.client.tcp), &alloc_cb,
                [](uv_stream_t* st, ssize_t n, const uv_buf_t*) {
                  auto* p = static_cast<Peer*>(st->data);
                  ++p->rig->progress_;
                  if (n > 0) {
                    p->in.insert(p->in.end(), p->scratch, p->scratch + n);
                    p->rig->on_peer_bytes(*p);
                  } else if (n < 0) {
                    p->eof = true;
                    uv_read_stop(st);
                  }
                });
}

void SessionRig::on_front_connection(uv_stream_t* server, int status) {
  auto* rig = static_cast<SessionRig*>(server->data);
  State& s = *rig->st_;
  ++rig->progress_;
  if (status != 0) die("front accept failed");
  if (s.session != nullptr) {
    // Not our client (the rig connects once): turn it away.
    auto* stranger = new uv_tcp_t;
    uv_tcp_init(&s.loop, stranger);
    uv_accept(server, reinterpret_cast<uv_stream_t*>(stranger));
    uv_close(reinterpret_cast<uv_handle_t*>(stranger),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
    return;
  }
  auto transport = std::make_unique<proxy::TcpTransport>(&s.loop);
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(transport->handle())) != 0)
    die("accept into the session");
  transport->connected();  // TCP_NODELAY, as an adopted client gets it
  s.session = new proxy::Session(s.ctx, s.list, rig->options_.node_id, std::move(transport));
  ++s.connections;
  s.session->count_against(&s.connections);
  s.session->start();
}

void SessionRig::on_broker_connection(uv_stream_t* server, int status) {
  auto* rig = static_cast<SessionRig*>(server->data);
  State& s = *rig->st_;
  ++rig->progress_;
  if (status != 0) die("broker accept failed");
  if (s.broker_accepted) {
    // A session opens one upstream connection; a second one is a finding.
    die("the session opened a second upstream connection");
  }
  uv_tcp_init(&s.loop, &s.broker.tcp);
  s.broker.tcp.data = &s.broker;
  s.broker.open = true;
  if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&s.broker.tcp)) != 0) die("broker accept");
  s.broker_accepted = true;
  uv_read_start(reinterpret_cast<uv_stream_t*>(&s.broker.tcp), &alloc_cb,
                [](uv_stream_t* st, ssize_t n, const uv_buf_t*) {
                  auto* p = static_cast<Peer*>(st->data);
                  ++p->rig->progress_;
                  if (n > 0) {
                    p->in.insert(p->in.end(), p->scratch, p->scratch + n);
                    p->rig->on_peer_bytes(*p);
                  } else if (n < 0) {
                    p->eof = true;
                    uv_read_stop(st);
                  }
                });
}

void SessionRig::on_peer_bytes(Peer& p) {
  State& s = *st_;
  if (p.is_client) {
    stats_.client_bytes_in += p.in.size();
    // Invariant 2: responses come back in request order with the client's
    // own correlation ids: the ids seen form a subsequence of those sent
    // (acks=0 Produce and refused frames get none).
    size_t at = 0;
    while (p.in.size() - at >= 4) {
      int32_t size = read_be32(p.in.data() + at);
      if (size < 4) die("epochgate sent the client a frame shorter than a correlation id");
      if (p.in.size() - at < 4 + static_cast<size_t>(size)) break;
      int32_t corr = read_be32(p.in.data() + at + 4);
      while (s.response_cursor < s.request_ids.size() && s.request_ids[s.response_cursor] != corr)
        ++s.response_cursor;
      if (s.response_cursor == s.request_ids.size())
        die("a response reached the client out of request order or with a foreign correlation id");
      ++s.response_cursor;
      if (contains_marker(p.in.data() + at, 4 + static_cast<size_t>(size))) s.marker_seen = true;
      at += 4 + static_cast<size_t>(size);
    }
    p.in.erase(p.in.begin(), p.in.begin() + static_cast<ptrdiff_t>(at));
    return;
  }
  // Broker: split forwarded request frames.
  stats_.broker_bytes_in += p.in.size();
  size_t at = 0;
  while (p.in.size() - at >= 4) {
    int32_t size = read_be32(p.in.data() + at);
    if (size < 8 || static_cast<uint32_t>(size) > options_.max_frame_bytes + 64u)
      die("epochgate forwarded a malformed request frame upstream");
    if (p.in.size() - at < 4 + static_cast<size_t>(size)) break;
    const uint8_t* f = p.in.data() + at + 4;
    Forwarded fw{static_cast<int16_t>((f[0] << 8) | f[1]), static_cast<int16_t>((f[2] << 8) | f[3]),
                 read_be32(f + 4)};
    ++stats_.forwarded_frames;
    if (options_.auto_answer) {
      answer_with_sample(fw);
    } else {
      unanswered_.push_back(fw);
    }
    at += 4 + static_cast<size_t>(size);
  }
  p.in.erase(p.in.begin(), p.in.begin() + static_cast<ptrdiff_t>(at));
}

void SessionRig::answer_with_sample(const Forwarded& f) {
  std::vector<uint8_t> out;
  bool done = std::apply(
      [&](auto... m) {
        return (sample_response<decltype(m)>(f.api_key, f.api_version, f.correlation_id, out) ||
                ...);
      },
      codec::AllMessages{});
  if (!done) {
    // An API the codec does not decode: an empty body behind the right header.
    put_be32(out, 0);
    put_be32(out, static_cast<uint32_t>(f.correlation_id));
    if (codec::response_header_version(f.api_key, f.api_version) >= 1) out.push_back(0);
    uint32_t n = static_cast<uint32_t>(out.size() - 4);
    out[0] = static_cast<uint8_t>(n >> 24);
    out[1] = static_cast<uint8_t>(n >> 16);
    out[2] = static_cast<uint8_t>(n >> 8);
    out[3] = static_cast<uint8_t>(n);
  }
  write(st_->broker, std::move(out));
}

void SessionRig::write(Peer& p, std::vector<uint8_t> bytes) {
  if (!p.open || p.closing || bytes.empty()) return;
  auto* w = new WriteReq{};
  w->bytes = std::move(bytes);
  w->rig = this;
  w->progress = &progress_;
  w->req.data = w;
  uv_buf_t b = uv_buf_init(reinterpret_cast<char*>(w->bytes.data()),
                           static_cast<unsigned>(w->bytes.size()));
  int rc = uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&p.tcp), &b, 1,
                    [](uv_write_t* req, int) {
                      auto* w = static_cast<WriteReq*>(req->data);
                      ++*w->progress;
                      delete w;
                    });
  if (rc != 0) delete w;  // the peer is gone: nothing to deliver
}

void SessionRig::client_send(const uint8_t* data, size_t n) {
  State& s = *st_;
  s.client_stream.insert(s.client_stream.end(), data, data + n);
  // Track the correlation ids of whole frames, as epochgate splits them.
  while (s.client_stream.size() - s.client_split_at >= 4) {
    int32_t size = read_be32(s.client_stream.data() + s.client_split_at);
    if (size < 0 || static_cast<uint32_t>(size) > options_.max_frame_bytes) {
      s.client_split_at = s.client_stream.size();  // epochgate closes here
      break;
    }
    if (s.client_stream.size() - s.client_split_at < 4 + static_cast<size_t>(size)) break;
    if (size >= 8) s.request_ids.push_back(read_be32(s.client_stream.data() + s.client_split_at + 8));
    s.client_split_at += 4 + static_cast<size_t>(size);
  }
  write(s.client, std::vector<uint8_t>(data, data + n));
}

void SessionRig::client_send_frame(const uint8_t* payload, size_t n) {
  std::vector<uint8_t> f;
  put_be32(f, static_cast<uint32_t>(n));
  f.insert(f.end(), payload, payload + n);
  client_send(f.data(), f.size());
}

void SessionRig::broker_send(const uint8_t* data, size_t n) {
  write(st_->broker, std::vector<uint8_t>(data, data + n));
}

bool SessionRig::broker_answer(const uint8_t* rest, size_t n) {
  if (unanswered_.empty()) return false;
  Forwarded f = unanswered_.front();
  unanswered_.pop_front();
  std::vector<uint8_t> out;
  put_be32(out, static_cast<uint32_t>(4 + n));
  put_be32(out, static_cast<uint32_t>(f.correlation_id));
  out.insert(out.end(), rest, rest + n);
  write(st_->broker, std::move(out));
  return true;
}

bool SessionRig::session_alive() const { return st_->list.size() > 0; }

void SessionRig::run_until(bool (*done)(const SessionRig&), uint64_t budget_ms) {
  State& s = *st_;
  uint64_t deadline = now_ms() + budget_ms;
  uv_timer_start(&s.guard, [](uv_timer_t*) {}, 10, 10);
  while (!done(*this) && now_ms() < deadline) {
    uv_run(&s.loop, UV_RUN_ONCE);
    recheck_budget();
  }
  uv_timer_stop(&s.guard);
}

void SessionRig::recheck_budget() {
  State& s = *st_;
  if (!s.budget_recheck_due) return;
  s.budget_recheck_due = false;
  s.list.for_each([](proxy::Session& x) { x.recheck_budget(); });
}

void SessionRig::pump() {
  State& s = *st_;
  uint64_t deadline = now_ms() + 2000;
  int idle = 0;
  while (idle < 4 && now_ms() < deadline) {
    uint64_t before = progress_;
    uv_run(&s.loop, UV_RUN_NOWAIT);
    recheck_budget();
    idle = progress_ == before ? idle + 1 : 0;
  }
  stats_.client_eof = s.client.eof;
  stats_.broker_eof = s.broker.eof;
}

SessionRig::~SessionRig() {
  State& s = *st_;
  pump();
  // Invariant 4: an upstream address never reaches the client. Sample
  // responses name brokers "Host-<n>"; checked unless the client itself sent
  // that text (a local answer may echo a topic name the client chose).
  if (options_.auto_answer && s.marker_seen && !contains_marker(s.client_stream.data(), s.client_stream.size()))
    die("an upstream broker host (\"Host-...\") reached the client");
  if (s.session != nullptr && session_alive()) s.session->close(proxy::CloseReason::kShutdown);
  for (Peer* p : {&s.client, &s.broker}) {
    if (p->open && !p->closing) {
      p->closing = true;
      // RST, not FIN: no TIME_WAIT piles up over millions of runs.
      if (uv_tcp_close_reset(&p->tcp, nullptr) != 0)
        uv_close(reinterpret_cast<uv_handle_t*>(&p->tcp), nullptr);
    }
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&s.front), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&s.broker_listener), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&s.guard), nullptr);
  uint64_t deadline = now_ms() + 5000;
  while (uv_loop_alive(&s.loop)) {
    uv_run(&s.loop, UV_RUN_NOWAIT);
    if (!uv_loop_alive(&s.loop)) break;
    if (now_ms() > deadline) {
      uv_walk(&s.loop,
              [](uv_handle_t* h, void*) {
                std::fprintf(stderr, "open handle: %s active=%d\n", uv_handle_type_name(h->type),
                             uv_is_active(h));
              },
              nullptr);
      die("handles still open 5 s after closing the session");
    }
    usleep(50);
  }
  if (s.list.size() != 0) die("the session was never freed after close");
  if (s.connections.load() != 0) die("the connection count did not return to zero");
  // Connections report their buffers' capacity to the budget; with the
  // session freed nothing may be left (a moved-from ByteBuffer that kept its
  // capacity once left bytes behind for good: faults.limits in CI).
  if (s.budget.used() != 0) {
    std::fprintf(stderr, "buffer budget still holds %lld bytes\n",
                 static_cast<long long>(s.budget.used()));
    die("the buffer budget did not return to zero after the session closed");
  }
  if (uv_loop_close(&s.loop) != 0) die("uv_loop_close failed: a handle or request leaked");
}

}  // namespace epochgate::fuzz
