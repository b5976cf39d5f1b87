// tests/proxy/app/acceptor_test.cc: the Acceptor on a real loop and loopback
// sockets: every connection reaches the hand-off with its listener's node id;
// a removed listener's port refuses connections; out of descriptors
// (RLIMIT_NOFILE lowered in a child process) accepting backs off instead of
// spinning, and the waiting client is served, not closed, once descriptors free.
#include "proxy/app/acceptor.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "proxy/net/listen_socket.h"

namespace epochgate::proxy {
namespace {

int connect_to(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void run_for(uv_loop_t* loop, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    uv_run(loop, UV_RUN_NOWAIT);
    usleep(1000);
  }
}

void close_loop(uv_loop_t* loop, Acceptor& a) {
  a.close_all();
  uv_run(loop, UV_RUN_DEFAULT);
}

TEST(Acceptor, HandsEveryConnectionOffWithItsNodeId) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  std::vector<std::pair<int32_t, int>> got;
  {
    Acceptor acc(&loop, [&](int32_t node, int fd) { got.emplace_back(node, fd); }, nullptr);
    ListenSocket boot, n7;
    std::string error;
    ASSERT_TRUE(open_listen_socket("127.0.0.1", 0, 16, boot, error)) << error;
    ASSERT_TRUE(open_listen_socket("127.0.0.1", 0, 16, n7, error)) << error;
    acc.add(-1, boot.fd);
    acc.add(7, n7.fd);
    std::vector<int> clients = {connect_to(boot.port), connect_to(n7.port), connect_to(n7.port)};
    for (int i = 0; i < 200 && got.size() < 3; ++i) run_for(&loop, 5);
    ASSERT_EQ(got.size(), 3u);
    int on7 = 0;
    for (auto& [node, fd] : got) {
      on7 += node == 7;
      EXPECT_TRUE(node == 7 || node == -1);
      ::close(fd);
    }
    EXPECT_EQ(on7, 2);
    acc.remove(7);
    run_for(&loop, 10);
    EXPECT_EQ(connect_to(n7.port), -1) << "a removed listener still accepts";
    for (int c : clients) ::close(c);
    close_loop(&loop, acc);
  }
  EXPECT_EQ(uv_loop_close(&loop), 0);
}

// Child process body: returns the exit code (0 = pass).
int shortage_child() {
  uv_loop_t loop;
  uv_loop_init(&loop);
  int errors = 0, handed = 0;
  Acceptor::Options o;
  o.backoff_initial_ms = 10;
  o.backoff_max_ms = 80;
  Acceptor acc(&loop, [&](int32_t, int fd) { ++handed; ::close(fd); },
               [&](std::string_view why) { errors += why == "emfile"; }, o);
  ListenSocket l;
  std::string error;
  if (!open_listen_socket("127.0.0.1", 0, 16, l, error)) return 10;
  acc.add(0, l.fd);
  int client = connect_to(l.port);
  if (client < 0) return 11;
  // No descriptor left for accept(2): the next number is the limit.
  int probe = dup(0);
  close(probe);
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rlimit low = rl;
  low.rlim_cur = static_cast<rlim_t>(probe);
  if (setrlimit(RLIMIT_NOFILE, &low) != 0) return 12;
  run_for(&loop, 400);
  if (errors == 0) return 13;           // the shortage was not reported
  if (errors > 20) return 14;           // spinning: ~6 expected with backoff 10..80 ms
  if (handed != 0) return 15;
  if (!acc.backing_off() && errors == 0) return 16;
  // The client waited in the backlog: not accepted-and-closed.
  char c;
  if (recv(client, &c, 1, MSG_DONTWAIT) == 0) return 17;
  setrlimit(RLIMIT_NOFILE, &rl);
  for (int i = 0; i < 100 && handed == 0; ++i) run_for(&loop, 5);
  if (handed != 1) return 18;
  ::close(client);
  close_loop(&loop, acc);
  return uv_loop_close(&loop) == 0 ? 0 : 19;
}

TEST(Acceptor, OutOfDescriptorsBacksOffAndServesTheWaitingClientLater) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(shortage_child());
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see shortage_child() for the code";
}

// Child process body: with a reserve of 8, the accept that leaves fewer
// than 8 descriptors pauses accepting; the next clients wait, not closed.
int reserve_child() {
  uv_loop_t loop;
  uv_loop_init(&loop);
  int reserve_pauses = 0, handed = 0;
  Acceptor::Options o;
  o.backoff_initial_ms = 10;
  o.backoff_max_ms = 40;
  o.fd_reserve = 8;
  std::vector<int> accepted;
  Acceptor acc(&loop, [&](int32_t, int fd) { ++handed; accepted.push_back(fd); },
               [&](std::string_view why) { reserve_pauses += why == "fd_reserve"; }, o);
  ListenSocket l;
  std::string error;
  if (!open_listen_socket("127.0.0.1", 0, 16, l, error)) return 10;
  acc.add(0, l.fd);
  std::vector<int> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(connect_to(l.port));
  int probe = dup(0);
  close(probe);
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rlimit low = rl;
  low.rlim_cur = static_cast<rlim_t>(probe + 8);  // the first accept lands in the reserve
  if (setrlimit(RLIMIT_NOFILE, &low) != 0) return 12;
  run_for(&loop, 300);
  if (handed != 1) return 20 + handed;
  if (reserve_pauses != 1) return 30 + reserve_pauses;
  setrlimit(RLIMIT_NOFILE, &rl);
  for (int i = 0; i < 100 && handed < 3; ++i) run_for(&loop, 5);
  if (handed != 3) return 40 + handed;
  for (int fd : accepted) ::close(fd);
  for (int fd : clients) ::close(fd);
  close_loop(&loop, acc);
  return uv_loop_close(&loop) == 0 ? 0 : 19;
}

TEST(Acceptor, AcceptingPausesBeforeTheLastDescriptorsAreGone) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(reserve_child());
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see reserve_child() for the code";
}

}  // namespace
}  // namespace epochgate::proxy
