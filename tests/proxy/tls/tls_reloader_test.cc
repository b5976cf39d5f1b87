// tests/proxy/tls/tls_reloader_test.cc: certificate reload: a rotated file is
// picked up (file watch, also in a directory that keeps changing, and
// forced, as SIGHUP does), a bad one is refused naming the file with the old
// context kept, and the metrics show both.
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <uv.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "metrics/tls_metrics.h"
#include "proxy/tls/tls_reloader.h"
#include "tests/proxy/tls_test_support.h"

namespace epochgate::proxy::tls {
namespace {

using test::cert;

std::string scrape(prometheus::Registry& r) {
  return prometheus::TextSerializer().Serialize(r.Collect());
}

struct Rig {
  Rig() {
    uv_loop_init(&loop);
    dir = test::cert_dir() + "/reload-" + std::to_string(counter++);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(cert("server.crt"), dir + "/tls.crt");
    std::filesystem::copy_file(cert("server.key"), dir + "/tls.key");
    config::TlsConfig t;
    t.cert_file = dir + "/tls.crt";
    t.key_file = dir + "/tls.key";
    metrics = std::make_unique<metrics::TlsMetrics>(registry);
    reloader = std::make_unique<TlsReloader>(&loop, t, config::UpstreamTlsConfig{}, metrics.get());
  }
  ~Rig() {
    reloader->close();
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
  }
  // Runs the loop until `done` or 5 s.
  template <class F>
  bool run_until(F done) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < end) uv_run(&loop, UV_RUN_NOWAIT), usleep(10000);
    return done();
  }
  static inline int counter = 0;
  uv_loop_t loop;
  std::string dir;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<metrics::TlsMetrics> metrics;
  std::unique_ptr<TlsReloader> reloader;
};

// A second server certificate with another subject, signed by the same CA.
std::string rotated() {
  static const std::string made = [] {
    std::string cmd = std::string(EPOCHGATE_SOURCE_DIR) + "/tools/tls/make-certs.sh leaf " +
                      test::cert_dir() + " rotated --cn rotated.kafka.example.com >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    return cert("rotated");
  }();
  return made;
}

TEST(TlsReloader, RotatedFilesAreUsedByNewContextsOnly) {
  Rig r;
  std::string error;
  ASSERT_TRUE(r.reloader->load(error)) << error;
  ASSERT_EQ(r.reloader->start(), 0);
  auto before = r.reloader->current_server();
  ASSERT_TRUE(before);
  EXPECT_EQ(before->files().front().subject.find("rotated"), std::string::npos);
  // Kubernetes-like rotation: new files renamed over the old ones.
  std::filesystem::copy_file(rotated() + ".crt", r.dir + "/tls.crt.new");
  std::filesystem::copy_file(rotated() + ".key", r.dir + "/tls.key.new");
  std::filesystem::rename(r.dir + "/tls.key.new", r.dir + "/tls.key");
  std::filesystem::rename(r.dir + "/tls.crt.new", r.dir + "/tls.crt");
  ASSERT_TRUE(r.run_until([&] { return r.reloader->reloads_ok() == 1; }))
      << "refused: " << r.reloader->reloads_refused();
  auto after = r.reloader->current_server();
  EXPECT_NE(after->files().front().subject.find("rotated.kafka.example.com"), std::string::npos);
  // The old context is still whole for connections made from it.
  EXPECT_EQ(before->files().front().subject.find("rotated"), std::string::npos);
  EXPECT_NE(SSL_CTX_get0_certificate(before->ctx()), nullptr);
  EXPECT_NE(scrape(*r.registry).find("epochgate_tls_reloads_total{result=\"ok\"} 1"), std::string::npos);
  EXPECT_NE(r.reloader->files_json().find("rotated.kafka.example.com"), std::string::npos);
}

TEST(TlsReloader, KeyThatDoesNotMatchIsRefusedAndTheOldContextStays) {
  Rig r;
  std::string error;
  ASSERT_TRUE(r.reloader->load(error)) << error;
  auto before = r.reloader->current_server();
  std::filesystem::copy_file(cert("client.key"), r.dir + "/tls.key",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_FALSE(r.reloader->reload("SIGHUP", true, &error));
  EXPECT_NE(error.find(r.dir + "/tls.key"), std::string::npos) << error;
  EXPECT_NE(error.find("key values mismatch"), std::string::npos) << error;
  EXPECT_EQ(r.reloader->current_server(), before);
  EXPECT_NE(scrape(*r.registry).find("epochgate_tls_reloads_total{result=\"refused\"} 1"),
            std::string::npos);
  // The same bad bytes are not retried by a file event; a fix is picked up.
  EXPECT_TRUE(r.reloader->reload("file change", false, &error));
  EXPECT_EQ(r.reloader->current_server(), before);
  std::filesystem::copy_file(cert("server.key"), r.dir + "/tls.key",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_TRUE(r.reloader->reload("file change", false, &error)) << error;
  EXPECT_NE(r.reloader->current_server(), before);
}

TEST(TlsReloader, ABusyDirectoryDoesNotPostponeTheReload) {
  // A log file beside the certificates is written every 50 ms, more often
  // than the debounce: the rotation is still picked up (after about a
  // second) while the writes go on.
  Rig r;
  std::string error;
  ASSERT_TRUE(r.reloader->load(error)) << error;
  ASSERT_EQ(r.reloader->start(), 0);
  std::filesystem::copy_file(rotated() + ".crt", r.dir + "/tls.crt.new");
  std::filesystem::copy_file(rotated() + ".key", r.dir + "/tls.key.new");
  std::filesystem::rename(r.dir + "/tls.key.new", r.dir + "/tls.key");
  std::filesystem::rename(r.dir + "/tls.crt.new", r.dir + "/tls.crt");
  const auto rotated_at = std::chrono::steady_clock::now();
  auto next_write = rotated_at;
  FILE* log = std::fopen((r.dir + "/epochgate.log").c_str(), "a");
  ASSERT_NE(log, nullptr);
  // Writes for 3 s whatever happens, so an uncapped debounce never fires.
  const auto writes_end = rotated_at + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < writes_end) {
    if (std::chrono::steady_clock::now() >= next_write) {
      std::fputs("a line\n", log);
      std::fflush(log);
      next_write += std::chrono::milliseconds(50);
    }
    uv_run(&r.loop, UV_RUN_NOWAIT);
    usleep(5000);
  }
  std::fclose(log);
  ASSERT_EQ(r.reloader->reloads_ok(), 1u) << "no reload while the directory kept changing";
  EXPECT_NE(r.reloader->current_server()->files().front().subject.find("rotated.kafka.example.com"),
            std::string::npos);
}

TEST(TlsReloader, ExpiryGaugeCountsDownToNotAfter) {
  Rig r;
  std::string error;
  ASSERT_TRUE(r.reloader->load(error)) << error;
  const std::string text = scrape(*r.registry);
  const std::string key = "epochgate_tls_certificate_expiry_seconds{file=\"" + r.dir + "/tls.crt\"} ";
  const auto at = text.find(key);
  ASSERT_NE(at, std::string::npos) << text;
  const double seconds = std::atof(text.c_str() + at + key.size());
  const int64_t expect = r.reloader->current_server()->files().front().not_after - std::time(nullptr);
  EXPECT_NEAR(seconds, double(expect), 5.0);
  EXPECT_GT(seconds, 0);
  // Start-up refuses a missing file with its name.
  config::TlsConfig t;
  t.cert_file = r.dir + "/missing.crt";
  t.key_file = r.dir + "/tls.key";
  TlsReloader bad(&r.loop, t, {}, nullptr);
  EXPECT_FALSE(bad.load(error));
  EXPECT_NE(error.find("missing.crt"), std::string::npos) << error;
}

}  // namespace
}  // namespace epochgate::proxy::tls
