// ScramDerivation: PBKDF2 on libuv's thread pool, logins of one loop that
// need the same salted password sharing one derivation, and the bound on
// derivations queued (a login over it fails at once, nothing queued).
#include "proxy/client/scram_derivation.h"

#include <gtest/gtest.h>
#include <uv.h>

#include <memory>
#include <string>
#include <vector>

#include "proxy/client/sasl_scram.h"
#include "proxy/client/sasl_scram_cache.h"

namespace epochgate::proxy {
namespace {

std::unique_ptr<ScramSaltedPassword> need(const std::string& salt, int iterations = 4096) {
  auto n = std::make_unique<ScramSaltedPassword>();
  n->hash = ScramHash::kSha256;
  n->password = "pencil";
  n->salt = salt;
  n->iterations = iterations;
  EXPECT_FALSE(n->from_cache());  // a salt no other test used
  return n;
}

TEST(ScramDerivation, LoginsNeedingOneSaltedPasswordShareOneDerivation) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  const uint64_t runs = scram_salted_password_runs();
  std::vector<std::string> got;
  std::string error;
  std::vector<std::unique_ptr<ScramDerivation>> waits;
  // Every login looked in the cache before any derivation started: a pool
  // thread may finish one (and fill the cache) before the next start().
  std::vector<std::unique_ptr<ScramSaltedPassword>> needs;
  for (int i = 0; i < 3; ++i) needs.push_back(need("shared-salt-1"));
  for (int i = 0; i < 3; ++i) {
    waits.push_back(ScramDerivation::start(
        &loop, std::move(needs[i]),
        [&got](std::unique_ptr<ScramSaltedPassword> r) { got.push_back(r->salted); }, error));
    ASSERT_TRUE(waits.back()) << error;
  }
  EXPECT_EQ(ScramDerivation::queued(), 1u);
  EXPECT_TRUE(got.empty());  // nothing ran on the calling thread
  uv_run(&loop, UV_RUN_DEFAULT);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].size(), 32u);
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(got[1], got[2]);
  EXPECT_EQ(scram_salted_password_runs() - runs, 1u);
  EXPECT_EQ(ScramDerivation::queued(), 0u);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(ScramDerivation, ADroppedWaitIsNeverCalledBack) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  int called = 0;
  std::string error;
  auto first = need("dropped-salt-1");
  auto second = need("dropped-salt-1");  // before the first can fill the cache
  auto kept = ScramDerivation::start(
      &loop, std::move(first), [&called](auto) { ++called; }, error);
  auto dropped = ScramDerivation::start(
      &loop, std::move(second), [&called](auto) { called += 100; }, error);
  ASSERT_TRUE(kept && dropped);
  dropped.reset();
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(called, 1);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

TEST(ScramDerivation, OverTheBoundALoginFailsAtOnce) {
  uv_loop_t loop;
  ASSERT_EQ(uv_loop_init(&loop), 0);
  std::string error;
  int done = 0;
  std::vector<std::unique_ptr<ScramDerivation>> waits;
  for (size_t i = 0; i < ScramDerivation::kMaxQueued; ++i) {
    waits.push_back(ScramDerivation::start(
        &loop, need("bound-salt-" + std::to_string(i)), [&done](auto) { ++done; }, error));
    ASSERT_TRUE(waits.back()) << i << ": " << error;
  }
  auto over = ScramDerivation::start(&loop, need("bound-salt-over"), [&done](auto) { done += 100; },
                                     error);
  EXPECT_FALSE(over);
  EXPECT_NE(error.find("too many SCRAM"), std::string::npos) << error;
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(done, static_cast<int>(ScramDerivation::kMaxQueued));
  // Room again once they finished.
  auto again = ScramDerivation::start(&loop, need("bound-salt-again"), [&done](auto) { ++done; },
                                      error);
  EXPECT_TRUE(again) << error;
  uv_run(&loop, UV_RUN_DEFAULT);
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

}  // namespace
}  // namespace epochgate::proxy
