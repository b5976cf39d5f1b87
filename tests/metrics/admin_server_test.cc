// tests/metrics/admin_server_test.cc: the admin HTTP server on a real loop
// thread, driven by Debian's curl and by raw sockets (for pipelining, slow and
// idle clients). /metrics is checked by prometheus_client's parser. Every test
// closes the server and asserts uv_loop_close() == 0.
#include "metrics/admin_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/registry.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "metrics/proxy_metrics.h"
#include "tests/metrics/loop_thread.h"

namespace epochgate::metrics {
namespace {

using namespace std::chrono_literals;

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

// Runs a shell command, capturing stdout (and stderr when the command says 2>&1).
CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/admin_" + std::to_string(getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Plain blocking loopback client with a receive timeout.
class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool connected() const { return connected_; }
  bool send_all(const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      const ssize_t n = ::send(fd_, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until `stop(buffer)` is true, EOF, or `timeout`. Returns what arrived;
  // `eof` says whether the server closed.
  std::string read_until(const std::function<bool(const std::string&)>& stop,
                         std::chrono::milliseconds timeout, bool* eof = nullptr) {
    std::string got;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    if (eof) *eof = false;
    while (!stop(got)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        if (eof) *eof = true;
        break;
      }
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

class AdminServerTest : public ::testing::Test {
 protected:
  void start(AdminOptions options = {}) {
    registry_ = std::make_shared<prometheus::Registry>();
    metrics_ = std::make_unique<ProxyMetrics>(registry_);
    AdminHandlers h;
    h.metrics = AdminHandlers::metrics_from(registry_, metrics_.get());
    h.healthz = [] { return true; };
    h.readyz = [this] {
      Readiness r;
      r.ready = ready_.load();
      if (!r.ready) r.reason = "draining";
      return r;
    };
    h.debug_metadata = [] { return std::string(R"({"topics":[{"name":"t","partitions":1}]})"); };
    h.debug_config = [this]() -> std::string {
      if (throw_in_config_) throw std::runtime_error("boom");
      return R"({"listen":"127.0.0.1:9092"})";
    };
    port_ = loop_.run([&] {
      server_ = std::make_unique<AdminServer>(loop_.loop(), std::move(h), options);
      ListenResult r = server_->listen("127.0.0.1", 0);
      EXPECT_TRUE(r.ok()) << r.message;
      EXPECT_EQ(r.port, server_->bound_port());
      return r.port;
    });
    ASSERT_NE(port_, 0);
  }

  void TearDown() override {
    if (server_) {
      std::promise<void> closed;
      loop_.run([&] { server_->close([&] { closed.set_value(); }); });
      ASSERT_EQ(closed.get_future().wait_for(5s), std::future_status::ready);
      loop_.run([&] { server_.reset(); });
    }
    EXPECT_EQ(loop_.stop(), 0);
  }

  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  // curl -s: body to `body`, returns the status code ("000" when curl failed).
  std::string curl_status(const std::string& args, std::string* body = nullptr) {
    const std::string out = temp_path("body");
    const auto r = run_command("curl -s --max-time 10 -o " + out + " -w '%{http_code}' " + args);
    if (body) *body = read_file(out);
    std::remove(out.c_str());
    return r.out;
  }

  template <typename F>
  auto on_loop(F&& f) {
    return loop_.run(std::forward<F>(f));
  }

  epochgate::testing::LoopThread loop_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<ProxyMetrics> metrics_;
  std::unique_ptr<AdminServer> server_;
  std::atomic<bool> ready_{true};
  bool throw_in_config_ = false;
  uint16_t port_ = 0;
};

TEST_F(AdminServerTest, HealthzAndReadyzAnswer200WhenReady) {
  start();
  std::string body;
  EXPECT_EQ(curl_status(url("/healthz"), &body), "200");
  EXPECT_EQ(body, "ok\n");
  EXPECT_EQ(curl_status(url("/readyz"), &body), "200");
  EXPECT_EQ(body, "ready\n");
  EXPECT_EQ(curl_status(url("/"), &body), "200");
  EXPECT_NE(body.find("/metrics"), std::string::npos);
}

TEST_F(AdminServerTest, ReadyzAnswers503WithReasonWhenNotReady) {
  start();
  ready_ = false;
  std::string body;
  EXPECT_EQ(curl_status(url("/readyz"), &body), "503");
  EXPECT_EQ(body, "not ready: draining\n");
  EXPECT_EQ(curl_status(url("/healthz")), "200");  // alive, only not ready
}

TEST_F(AdminServerTest, MetricsParseWithPrometheusClientAndCarryValues) {
  start();
  metrics_->request(0);
  metrics_->request(0);
  metrics_->request(1);
  metrics_->request(999);  // not a Kafka API key: "unknown", never a new label value
  metrics_->response(0);
  metrics_->bytes(Direction::kClientToUpstream, 1234);
  metrics_->connection_opened(Side::kClient, 3);
  metrics_->upstream_latency(0, 0.0042);
  metrics_->proxy_latency(0.00003);
  metrics_->frame_error("truncated");
  metrics_->config_reload(false);
  metrics_->fenced_partition(0, "not_leader", "enforce");
  metrics_->hint("synthesized");
  metrics_->metadata_refresh("urgent");
  metrics_->set_build_info("0.1.0-test", 1700000000.0);
  metrics_->set_ready(true);

  const std::string file = temp_path("metrics.txt");
  std::string body;
  ASSERT_EQ(curl_status(url("/metrics"), &body), "200");
  {
    std::ofstream out(file, std::ios::binary);
    out << body;
  }
  const std::string script = std::string(EPOCHGATE_TEST_SOURCE_DIR) + "/metrics/check_metrics.py";
  const std::string cmd =
      "/usr/bin/python3 " + script + " " + file +
      " family:epochgate_requests:counter family:epochgate_responses:counter"
      " family:epochgate_bytes:counter family:epochgate_connections_active:gauge"
      " family:epochgate_connections:counter"
      " family:epochgate_upstream_latency_seconds:histogram"
      " family:epochgate_proxy_latency_seconds:histogram family:epochgate_frame_errors:counter"
      " family:epochgate_backpressure_pauses:counter family:epochgate_config_reloads:counter"
      " family:epochgate_fenced_partitions:counter family:epochgate_hints:counter"
      " family:epochgate_epochs_injected:counter family:epochgate_metadata_refreshes:counter"
      " family:epochgate_view_partitions:gauge family:epochgate_build_info:gauge"
      " family:epochgate_start_time_seconds:gauge family:epochgate_ready:gauge"
      " 'sample:epochgate_requests_total{api=produce}=2'"
      " 'sample:epochgate_requests_total{api=fetch}=1'"
      " 'sample:epochgate_requests_total{api=unknown}=1'"
      " 'sample:epochgate_bytes_total{direction=client_to_upstream}=1234'"
      " 'sample:epochgate_connections_active{side=client,node=3}=1'"
      " 'sample:epochgate_connections_active{side=upstream,node=bootstrap}=0'"
      " 'sample:epochgate_upstream_latency_seconds_count{api=produce}=1'"
      " 'sample:epochgate_upstream_latency_seconds_bucket{api=produce,le=0.005}=1'"
      " 'sample:epochgate_upstream_latency_seconds_bucket{api=produce,le=0.0025}=0'"
      " 'sample:epochgate_frame_errors_total{reason=truncated}=1'"
      " 'sample:epochgate_config_reloads_total{result=failure}=1'"
      " 'sample:epochgate_config_reloads_total{result=success}=0'"
      " 'sample:epochgate_config_last_reload_successful=0'"
      " 'sample:epochgate_fenced_partitions_total{api=produce,reason=not_leader,mode=enforce}=1'"
      " 'sample:epochgate_build_info{version=0.1.0-test}=1'"
      " 'sample:epochgate_ready=1' 2>&1";
  const auto r = run_command(cmd);
  EXPECT_EQ(r.exit_code, 0) << r.out << "\n--- exposition ---\n" << read_file(file);
  std::remove(file.c_str());
}

TEST_F(AdminServerTest, MetricsContentTypeIsPrometheusText) {
  start();
  const auto r =
      run_command("curl -s --max-time 10 -o /dev/null -w '%{content_type}' " + url("/metrics"));
  EXPECT_EQ(r.out, "text/plain; version=0.0.4; charset=utf-8");
}

TEST_F(AdminServerTest, DebugEndpointsServeJson) {
  start();
  std::string body;
  EXPECT_EQ(curl_status(url("/debug/metadata"), &body), "200");
  EXPECT_EQ(body, "{\"topics\":[{\"name\":\"t\",\"partitions\":1}]}\n");
  const auto r = run_command("curl -s --max-time 10 -o /dev/null -w '%{content_type}' " +
                             url("/debug/config"));
  EXPECT_EQ(r.out, "application/json");
}

TEST_F(AdminServerTest, UnknownPathIs404) {
  start();
  EXPECT_EQ(curl_status(url("/nope")), "404");
  EXPECT_EQ(curl_status(url("/metricsX")), "404");
  EXPECT_EQ(curl_status(url("/metrics?name[]=x")), "200");  // query strings are ignored
}

TEST_F(AdminServerTest, OtherMethodsAre405WithAllow) {
  start();
  for (const char* method : {"POST", "PUT", "DELETE", "PATCH"}) {
    const auto r =
        run_command("curl -s -i --max-time 10 -X " + std::string(method) + " " + url("/metrics"));
    EXPECT_NE(r.out.find("HTTP/1.1 405 Method Not Allowed"), std::string::npos) << method;
    EXPECT_NE(r.out.find("Allow: GET, HEAD"), std::string::npos) << method;
  }
}

TEST_F(AdminServerTest, HeadAnswersHeadersWithoutBody) {
  start();
  const auto r = run_command("curl -s -I --max-time 10 " + url("/healthz"));
  EXPECT_NE(r.out.find("HTTP/1.1 200 OK"), std::string::npos);
  EXPECT_NE(r.out.find("Content-Length: 3"), std::string::npos);
  EXPECT_EQ(r.out.find("ok\n"), std::string::npos) << r.out;
}

TEST_F(AdminServerTest, KeepAliveServesTwoRequestsOnOneConnection) {
  start();
  const auto r =
      run_command("curl -sv --max-time 10 " + url("/healthz") + " " + url("/readyz") + " 2>&1");
  EXPECT_NE(r.out.find("ok\n"), std::string::npos);
  EXPECT_NE(r.out.find("ready\n"), std::string::npos);
  EXPECT_NE(r.out.find("Re-using existing connection"), std::string::npos) << r.out;
  EXPECT_EQ(on_loop([&] { return server_->connections_accepted(); }), 1u);
  EXPECT_EQ(on_loop([&] { return server_->requests_served(); }), 2u);
}

TEST_F(AdminServerTest, PipelinedRequestsAreAnsweredInOrder) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(
      c.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                 "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n"
                 "GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n"));
  const std::string got =
      c.read_until([](const std::string& s) { return s.find("ready\n") != std::string::npos; }, 5s);
  const auto first = got.find("HTTP/1.1 200 OK");
  const auto second = got.find("HTTP/1.1 404 Not Found");
  const auto third = got.find("HTTP/1.1 200 OK", first + 1);
  ASSERT_NE(first, std::string::npos) << got;
  ASSERT_NE(second, std::string::npos) << got;
  ASSERT_NE(third, std::string::npos) << got;
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_NE(got.find("ok\n"), std::string::npos);
}

TEST_F(AdminServerTest, ConnectionCloseIsHonouredAndLaterPipelinedRequestsIgnored) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(
      c.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
                 "GET /readyz HTTP/1.1\r\nHost: a\r\n\r\n"));
  bool eof = false;
  const std::string got = c.read_until([](const std::string&) { return false; }, 5s, &eof);
  EXPECT_TRUE(eof);
  EXPECT_EQ(count_of(got, "HTTP/1.1 "), 1u) << got;
  EXPECT_NE(got.find("Connection: close"), std::string::npos);
}

TEST_F(AdminServerTest, OversizedHeaderIs431) {
  start();
  const std::string big(10000, 'x');
  EXPECT_EQ(curl_status("-H 'X-Big: " + big + "' " + url("/healthz")), "431");
}

TEST_F(AdminServerTest, TooManyHeadersIs431) {
  AdminOptions o;
  o.max_headers = 16;
  start(o);
  std::string headers;
  for (int i = 0; i < 20; ++i) headers += " -H 'X-H" + std::to_string(i) + ": v'";
  EXPECT_EQ(curl_status(headers + " " + url("/healthz")), "431");
}

TEST_F(AdminServerTest, LongUrlIs414) {
  start();
  EXPECT_EQ(curl_status(url("/" + std::string(5000, 'a'))), "414");
}

TEST_F(AdminServerTest, LargeBodyIs413) {
  start();
  const std::string file = temp_path("big_body");
  {
    std::ofstream out(file);
    out << std::string(100000, 'b');
  }
  EXPECT_EQ(curl_status("-X POST --data-binary @" + file + " " + url("/metrics")), "413");
  std::remove(file.c_str());
}

TEST_F(AdminServerTest, MalformedRequestIs400) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send_all("NOT AN HTTP REQUEST\r\n\r\n"));
  bool eof = false;
  const std::string got = c.read_until([](const std::string&) { return false; }, 5s, &eof);
  EXPECT_EQ(got.rfind("HTTP/1.1 400 Bad Request", 0), 0u) << got;
  EXPECT_TRUE(eof);
}

TEST_F(AdminServerTest, SlowClientGets408AndIsClosed) {
  AdminOptions o;
  o.request_timeout_ms = 300;
  o.linger_ms = 200;
  start(o);
  RawClient c(port_);
  ASSERT_TRUE(c.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\n"));  // never finishes the head
  bool eof = false;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string got = c.read_until([](const std::string&) { return false; }, 5s, &eof);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_EQ(got.rfind("HTTP/1.1 408 Request Timeout", 0), 0u) << got;
  EXPECT_TRUE(eof);
}

TEST_F(AdminServerTest, IdleConnectionsAreClosed) {
  AdminOptions o;
  o.request_timeout_ms = 300;
  o.idle_timeout_ms = 300;
  start(o);
  RawClient silent(port_);  // never sends a byte
  RawClient idle(port_);    // one request, then keeps the connection idle
  ASSERT_TRUE(idle.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
  bool eof_silent = false, eof_idle = false;
  const auto t0 = std::chrono::steady_clock::now();
  silent.read_until([](const std::string&) { return false; }, 5s, &eof_silent);
  const std::string got = idle.read_until([](const std::string&) { return false; }, 5s, &eof_idle);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_TRUE(eof_silent);
  EXPECT_TRUE(eof_idle);
  EXPECT_NE(got.find("200 OK"), std::string::npos);
  // The peer sees EOF when the socket closes; the server forgets the
  // connection in the close callback a moment later.
  size_t open = 1;
  for (int i = 0; i < 100 && open != 0; ++i) {
    open = on_loop([&] { return server_->connection_count(); });
    if (open != 0) std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(open, 0u);
}

// Past the cap, a new connection (a probe) is served and the connection idle
// the longest is closed: idle keep-alive connections cannot lock probes out.
TEST_F(AdminServerTest, NewConnectionPastTheCapClosesTheLongestIdle) {
  AdminOptions o;
  o.max_connections = 2;
  start(o);
  RawClient a(port_);
  ASSERT_TRUE(a.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
  a.read_until([](const std::string& s) { return s.find("ok\n") != std::string::npos; }, 5s);
  std::this_thread::sleep_for(20ms);  // a is now idle longer than b
  RawClient b(port_);
  ASSERT_TRUE(b.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
  b.read_until([](const std::string& s) { return s.find("ok\n") != std::string::npos; }, 5s);
  RawClient probe(port_);
  ASSERT_TRUE(probe.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
  bool probe_eof = false;
  const std::string got = probe.read_until([](const std::string&) { return false; }, 5s, &probe_eof);
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK", 0), 0u) << got;
  bool a_eof = false;
  a.read_until([](const std::string&) { return false; }, 2s, &a_eof);
  EXPECT_TRUE(a_eof) << "the longest-idle connection should have made room";
  // b, idle for less time, still works.
  ASSERT_TRUE(b.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
  const std::string again =
      b.read_until([](const std::string& s) { return s.find("ok\n") != std::string::npos; }, 5s);
  EXPECT_NE(again.find("200 OK"), std::string::npos);
  EXPECT_EQ(on_loop([&] { return server_->connections_evicted(); }), 1u);
}

// Every slot mid-request (slow senders): the request that started first is
// dropped, and the probe still gets its answer.
TEST_F(AdminServerTest, SlowSendersInEverySlotStillLeaveRoomForAProbe) {
  AdminOptions o;
  o.max_connections = 2;
  start(o);
  RawClient s1(port_), s2(port_);
  ASSERT_TRUE(s1.send_all("GET /heal"));
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(s2.send_all("GET /heal"));
  std::this_thread::sleep_for(20ms);
  RawClient probe(port_);
  ASSERT_TRUE(probe.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"));
  const std::string got = probe.read_until([](const std::string&) { return false; }, 5s);
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK", 0), 0u) << got;
  bool eof1 = false;
  s1.read_until([](const std::string&) { return false; }, 2s, &eof1);
  EXPECT_TRUE(eof1);
}

TEST_F(AdminServerTest, DebugEndpointsServeLoopbackPeersWhenRestricted) {
  AdminOptions o;
  o.debug_loopback_only = true;
  start(o);
  std::string body;
  EXPECT_EQ(curl_status(url("/debug/config"), &body), "200");
  EXPECT_NE(body.find("listen"), std::string::npos);
}

TEST(AdminPeer, OnlyLoopbackAddressesCountAsLocal) {
  auto v4 = [](const char* a) {
    sockaddr_storage ss{};
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    inet_pton(AF_INET, a, &in->sin_addr);
    return ss;
  };
  auto v6 = [](const char* a) {
    sockaddr_storage ss{};
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    inet_pton(AF_INET6, a, &in6->sin6_addr);
    return ss;
  };
  EXPECT_TRUE(is_loopback_peer(v4("127.0.0.1")));
  EXPECT_TRUE(is_loopback_peer(v4("127.3.2.1")));
  EXPECT_TRUE(is_loopback_peer(v6("::1")));
  EXPECT_TRUE(is_loopback_peer(v6("::ffff:127.0.0.1")));
  EXPECT_FALSE(is_loopback_peer(v4("10.0.0.5")));
  EXPECT_FALSE(is_loopback_peer(v4("128.0.0.1")));
  EXPECT_FALSE(is_loopback_peer(v6("fd00::1")));
  EXPECT_FALSE(is_loopback_peer(v6("::ffff:10.0.0.5")));
}

TEST_F(AdminServerTest, HandlerExceptionIs500AndServerKeepsServing) {
  throw_in_config_ = true;
  start();
  EXPECT_EQ(curl_status(url("/debug/config")), "500");
  EXPECT_EQ(curl_status(url("/healthz")), "200");
}

TEST_F(AdminServerTest, ListenOnABusyPortFails) {
  start();
  const ListenResult r = on_loop([&] {
    AdminServer second(loop_.loop(), AdminHandlers{});
    ListenResult lr = second.listen("127.0.0.1", port_);
    return lr;  // `second` is destroyed with its handle closing; the loop frees it
  });
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, UV_EADDRINUSE) << r.message;
}

TEST_F(AdminServerTest, CloseWithOpenKeepAliveConnectionLeavesNoHandles) {
  start();
  RawClient c(port_);
  ASSERT_TRUE(c.send_all("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"));
  c.read_until([](const std::string& s) { return s.find("ok\n") != std::string::npos; }, 5s);
  EXPECT_EQ(on_loop([&] { return server_->connection_count(); }), 1u);
  // TearDown closes the server with this connection still open and checks
  // uv_loop_close() == 0.
}

}  // namespace
}  // namespace epochgate::metrics
