// tests/proxy/net/splice_pipe_test.cc: SplicePipe::move() between real
// loopback TCP sockets (non-blocking, as libuv leaves them): every byte
// arrives once and in order whether the destination takes all, part (the
// rest is spilled, in order, and the pipe is empty for the next move) or
// nothing; a source with fewer bytes than asked gives a short count, one with
// none EAGAIN (no error), one at its end UV_EOF only when nothing came; a
// closed destination is an error with the bytes still spilled; pipe2()
// failing for lack of descriptors makes ready() false, and it recovers.
#include "proxy/net/splice_pipe.h"

#include "tests/proxy/net/loopback_tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <vector>

namespace epochgate::proxy {
namespace {

/// A connected loopback TCP pair, both ends non-blocking (as libuv leaves them).
struct TcpPair : LoopbackTcp {
  TcpPair() {
    fcntl(a, F_SETFL, O_NONBLOCK);
    fcntl(b, F_SETFL, O_NONBLOCK);
  }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 10));
  return v;
}

/// Writes all of `v` to a non-blocking socket whose reader keeps up (test sizes are small).
void send_all(int fd, const std::vector<uint8_t>& v) {
  size_t off = 0;
  while (off < v.size()) {
    ssize_t n = write(fd, v.data() + off, v.size() - off);
    if (n > 0) off += static_cast<size_t>(n);
    else ASSERT_EQ(errno, EAGAIN);
  }
}

/// Reads until `n` bytes came; gives up after 10 s without a byte (bounded).
std::vector<uint8_t> recv_n(int fd, size_t n) {
  std::vector<uint8_t> out;
  uint8_t buf[65536];
  while (out.size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) break;
    ssize_t got = read(fd, buf, std::min(sizeof buf, n - out.size()));
    if (got == 0) break;
    if (got > 0) out.insert(out.end(), buf, buf + got);
  }
  return out;
}

/// Waits (at most 10 s) until `fd` has at least `n` bytes to read.
void wait_readable(int fd, size_t n) {
  std::vector<uint8_t> peek(n);
  for (int rounds = 0; rounds < 1000; ++rounds) {
    ssize_t got = recv(fd, peek.data(), n, MSG_PEEK | MSG_DONTWAIT);
    if (got >= static_cast<ssize_t>(n)) return;
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, 10);
  }
}

TEST(SplicePipe, MovesEveryByteInOrderAndIsEmptyAfter) {
  SplicePipe pipe;
  ASSERT_TRUE(pipe.ready(1));
  ASSERT_GE(pipe.capacity(), 4096u);
  TcpPair src, dst;  // src.a -> src.b (the source socket), dst.a (sink) -> dst.b
  std::vector<uint8_t> spilled;
  auto spill = [&](const uint8_t* d, size_t n) { spilled.insert(spilled.end(), d, d + n); };
  for (uint8_t round = 0; round < 3; ++round) {
    std::vector<uint8_t> data = pattern(std::min<size_t>(pipe.capacity(), 100000), round);
    send_all(src.a, data);
    wait_readable(src.b, data.size());
    SpliceStep s = pipe.move(src.b, dst.a, data.size(), spill);
    EXPECT_EQ(s.in, data.size());
    EXPECT_EQ(s.out, data.size());
    EXPECT_EQ(s.source_error, 0);
    EXPECT_EQ(s.sink_error, 0);
    EXPECT_TRUE(spilled.empty());
    EXPECT_EQ(recv_n(dst.b, data.size()), data);
  }
}

TEST(SplicePipe, ShortCountWhenTheSourceHasFewerBytes) {
  SplicePipe pipe;
  ASSERT_TRUE(pipe.ready(1));
  TcpPair src, dst;
  std::vector<uint8_t> data = pattern(1000, 3);
  send_all(src.a, data);
  wait_readable(src.b, data.size());
  auto spill = [](const uint8_t*, size_t) { FAIL() << "nothing should spill"; };
  SpliceStep s = pipe.move(src.b, dst.a, pipe.capacity(), spill);
  EXPECT_EQ(s.in, 1000u);
  EXPECT_EQ(s.out, 1000u);
  EXPECT_EQ(s.source_error, 0);
  EXPECT_EQ(recv_n(dst.b, 1000), data);
  // Nothing there now: EAGAIN is no error, and nothing moved.
  s = pipe.move(src.b, dst.a, pipe.capacity(), spill);
  EXPECT_EQ(s.in, 0u);
  EXPECT_EQ(s.source_error, 0);
}

TEST(SplicePipe, EndOfStreamOnlyOnceTheBytesBeforeItMoved) {
  SplicePipe pipe;
  ASSERT_TRUE(pipe.ready(1));
  TcpPair src, dst;
  std::vector<uint8_t> data = pattern(5000, 9);
  send_all(src.a, data);
  shutdown(src.a, SHUT_WR);
  wait_readable(src.b, data.size());
  auto spill = [](const uint8_t*, size_t) {};
  SpliceStep s = pipe.move(src.b, dst.a, pipe.capacity(), spill);
  EXPECT_EQ(s.in, 5000u);
  EXPECT_EQ(s.source_error, 0);  // the bytes first
  s = pipe.move(src.b, dst.a, pipe.capacity(), spill);
  EXPECT_EQ(s.in, 0u);
  EXPECT_EQ(s.source_error, UV_EOF);
  EXPECT_EQ(recv_n(dst.b, 5000), data);
}

TEST(SplicePipe, FullDestinationSpillsTheRestInOrderAndEmptiesThePipe) {
  SplicePipe pipe;
  ASSERT_TRUE(pipe.ready(1));
  TcpPair src, dst;
  // Fill the sink's send buffer and the peer's receive buffer first.
  int small = 4096;
  setsockopt(dst.a, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(dst.b, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  std::vector<uint8_t> filler;
  uint8_t junk[4096] = {};
  while (true) {
    ssize_t n = write(dst.a, junk, sizeof junk);
    if (n <= 0) break;
    filler.insert(filler.end(), junk, junk + n);
  }
  const size_t size = std::min<size_t>(pipe.capacity(), 200000);
  std::vector<uint8_t> data = pattern(size, 5);
  send_all(src.a, data);
  wait_readable(src.b, size);
  std::vector<uint8_t> spilled;
  auto spill = [&](const uint8_t* d, size_t n) { spilled.insert(spilled.end(), d, d + n); };
  SpliceStep s = pipe.move(src.b, dst.a, size, spill);
  EXPECT_EQ(s.in, size);
  EXPECT_LT(s.out, size);
  EXPECT_EQ(s.sink_error, 0);
  ASSERT_EQ(spilled.size(), s.in - s.out);
  // The sink got data[0, out) behind the filler, and the spill is the rest.
  std::vector<uint8_t> got = recv_n(dst.b, filler.size() + s.out);
  ASSERT_EQ(got.size(), filler.size() + s.out);
  EXPECT_TRUE(std::equal(data.begin(), data.begin() + static_cast<long>(s.out),
                         got.begin() + static_cast<long>(filler.size())));
  EXPECT_TRUE(std::equal(spilled.begin(), spilled.end(), data.begin() + static_cast<long>(s.out)));
  // The pipe kept nothing: the next move carries only new bytes.
  std::vector<uint8_t> next = pattern(3000, 77);
  send_all(src.a, next);
  wait_readable(src.b, next.size());
  spilled.clear();
  s = pipe.move(src.b, dst.a, pipe.capacity(), spill);
  EXPECT_EQ(s.in, next.size());
  EXPECT_EQ(s.out, next.size());
  EXPECT_EQ(recv_n(dst.b, next.size()), next);
}

TEST(SplicePipe, ClosedDestinationIsAnErrorAndTheBytesAreSpilled) {
  std::signal(SIGPIPE, SIG_IGN);  // as epochgate does (proxy/app/main.cc)
  SplicePipe pipe;
  ASSERT_TRUE(pipe.ready(1));
  TcpPair src, dst;
  close(dst.b);
  dst.b = -1;
  usleep(10000);
  // A first write may still be accepted until the peer's RST comes back.
  uint8_t one = 0;
  (void)!write(dst.a, &one, 1);
  usleep(10000);
  std::vector<uint8_t> data = pattern(2000, 1);
  send_all(src.a, data);
  wait_readable(src.b, data.size());
  std::vector<uint8_t> spilled;
  auto spill = [&](const uint8_t* d, size_t n) { spilled.insert(spilled.end(), d, d + n); };
  SpliceStep s = pipe.move(src.b, dst.a, pipe.capacity(), spill);
  EXPECT_EQ(s.in, data.size());
  EXPECT_NE(s.sink_error, 0);
  EXPECT_EQ(spilled.size(), s.in - s.out);
}

TEST(SplicePipe, NoDescriptorsMeansNotReadyThenRecovers) {
  // In a child, so the test binary's own limit is untouched.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit lim{};
    getrlimit(RLIMIT_NOFILE, &lim);
    int probe = dup(0);  // the lowest free descriptor
    close(probe);
    rlimit low{static_cast<rlim_t>(probe), lim.rlim_max};
    setrlimit(RLIMIT_NOFILE, &low);
    SplicePipe pipe;
    if (pipe.ready(1'000'000'000)) _exit(1);
    setrlimit(RLIMIT_NOFILE, &lim);
    if (pipe.ready(1'500'000'000)) _exit(2);  // retried at most once a second
    if (!pipe.ready(2'100'000'000)) _exit(3);
    _exit(pipe.capacity() >= 4096 ? 0 : 4);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace epochgate::proxy
