// epochgate-mockcluster: runs librdkafka 2.15.1's mock Kafka cluster for tests
// and the demo. Prints "BOOTSTRAP host:port,..." once, then answers stdin
// commands one line each (see command_shell.h). Ends on `quit`, stdin EOF,
// SIGTERM or SIGINT. Never part of the proxy; binds loopback only.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "command_shell.h"
#include "mock_cluster.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_signal(int) { g_stop = 1; }

struct TopicSpec {
  std::string name;
  int partitions = 1;
  int replication_factor = 1;
};

struct Options {
  int brokers = 3;
  std::vector<TopicSpec> topics;
  std::string host = "127.0.0.1";
  int log_level = 4;
  std::string debug;
  int rebalance_delay_ms = -1;
  int share_offset_reset = -1;
  int share_isolation = -1;
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: epochgate-mockcluster [--brokers N] [--topic NAME:PARTITIONS:RF]...\n"
               "                             [--host HOST] [--log-level 0-7] [--debug CTX]\n"
               "                             [--rebalance-delay-ms MS]\n"
               "                             [--share-offset-reset earliest|latest]\n"
               "                             [--share-isolation read_committed|read_uncommitted]\n"
               "Prints 'BOOTSTRAP host:port,...' then reads one command per line on stdin\n"
               "and answers each with one line 'OK [...]' or 'ERR <reason>'.\n"
               "Commands: %s\n",
               epochgate::mockcluster::command_summary().c_str());
}

bool parse_topic(const std::string& text, TopicSpec* spec) {
  const auto first = text.find(':');
  if (first == std::string::npos || first == 0) return false;
  spec->name = text.substr(0, first);
  const auto second = text.find(':', first + 1);
  spec->partitions = std::atoi(text.substr(first + 1, second - first - 1).c_str());
  spec->replication_factor =
      second == std::string::npos ? 1 : std::atoi(text.substr(second + 1).c_str());
  return spec->partitions > 0 && spec->replication_factor > 0;
}

bool parse_options(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "epochgate-mockcluster: %s needs a value\n", name);
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      std::exit(0);
    } else if (arg == "--brokers") {
      if ((v = value("--brokers")) == nullptr) return false;
      opt->brokers = std::atoi(v);
      if (opt->brokers < 1 || opt->brokers > 64) return false;
    } else if (arg == "--topic") {
      TopicSpec spec;
      if ((v = value("--topic")) == nullptr || !parse_topic(v, &spec)) return false;
      opt->topics.push_back(spec);
    } else if (arg == "--host") {
      if ((v = value("--host")) == nullptr) return false;
      opt->host = v;
    } else if (arg == "--log-level") {
      if ((v = value("--log-level")) == nullptr) return false;
      opt->log_level = std::atoi(v);
    } else if (arg == "--debug") {
      if ((v = value("--debug")) == nullptr) return false;
      opt->debug = v;
    } else if (arg == "--rebalance-delay-ms") {
      if ((v = value("--rebalance-delay-ms")) == nullptr) return false;
      opt->rebalance_delay_ms = std::atoi(v);
    } else if (arg == "--share-offset-reset") {
      if ((v = value("--share-offset-reset")) == nullptr) return false;
      if (std::strcmp(v, "earliest") == 0) {
        opt->share_offset_reset = 1;
      } else if (std::strcmp(v, "latest") == 0) {
        opt->share_offset_reset = 0;
      } else {
        return false;
      }
    } else if (arg == "--share-isolation") {
      if ((v = value("--share-isolation")) == nullptr) return false;
      if (std::strcmp(v, "read_committed") == 0) {
        opt->share_isolation = 1;
      } else if (std::strcmp(v, "read_uncommitted") == 0) {
        opt->share_isolation = 0;
      } else {
        return false;
      }
    } else {
      std::fprintf(stderr, "epochgate-mockcluster: unknown argument %s\n", arg.c_str());
      return false;
    }
  }
  return true;
}

void write_line(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse_options(argc, argv, &opt)) {
    usage(stderr);
    return 2;
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::string error;
  auto cluster =
      epochgate::mockcluster::MockCluster::create(opt.brokers, opt.log_level, opt.debug, &error);
  if (!cluster) {
    std::fprintf(stderr, "epochgate-mockcluster: %s\n", error.c_str());
    return 1;
  }
  if (opt.host != "127.0.0.1") cluster->advertise_host(opt.host);
  if (opt.rebalance_delay_ms >= 0) cluster->set_rebalance_delay_ms(opt.rebalance_delay_ms);
  if (opt.share_offset_reset >= 0) cluster->set_share_offset_reset(opt.share_offset_reset);
  if (opt.share_isolation >= 0) cluster->set_share_isolation(opt.share_isolation);
  for (const TopicSpec& topic : opt.topics) {
    const auto result = cluster->create_topic(topic.name, topic.partitions,
                                              topic.replication_factor);
    if (!result.ok()) {
      std::fprintf(stderr, "epochgate-mockcluster: create %s: %s\n", topic.name.c_str(),
                   result.error.c_str());
      return 1;
    }
  }
  write_line("BOOTSTRAP " + cluster->bootstrap());

  epochgate::mockcluster::CommandShell shell(*cluster);
  std::string pending;
  bool quit = false;
  char buf[4096];
  while (!quit && !g_stop) {
    pollfd pfd{STDIN_FILENO, POLLIN, 0};
    const int ready = poll(&pfd, 1, 200);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) continue;
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the harness went away
    pending.append(buf, static_cast<size_t>(n));
    size_t newline;
    while (!quit && (newline = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      write_line(shell.execute(line, &quit));
    }
  }
  cluster.reset();
  return 0;
}
