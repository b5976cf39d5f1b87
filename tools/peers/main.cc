// epochgate-rdkafka-check: a librdkafka 2.15.1 verification client. Produces a
// known set of records (plain, idempotent or transactional), optionally reads
// them back through a consumer group or share group, and prints one JSON line
// saying whether every acknowledged record arrived exactly once, in order.
// Test tooling only; it never talks to anything but the given bootstrap list.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "check_options.h"
#include "check_report.h"
#include "client_config.h"
#include "consume_phase.h"
#include "produce_phase.h"
#include "run_ledger.h"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop = true; }

std::string new_run_id() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace epochgate::peers;
  CheckOptions options;
  std::string error;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      std::fputs(check_usage().c_str(), stdout);
      return 0;
    }
  }
  if (!parse_check_options(argc, argv, &options, &error)) {
    std::fprintf(stderr, "epochgate-rdkafka-check: %s\n%s", error.c_str(), check_usage().c_str());
    return 2;
  }
  if (!open_client_log(options, &error)) {
    std::fprintf(stderr, "epochgate-rdkafka-check: %s\n", error.c_str());
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  const auto start = std::chrono::steady_clock::now();
  RunLedger ledger(new_run_id());
  const bool group = !options.consume_group.empty();
  const bool share = !options.share_group.empty();
  auto consume = [&]() {
    if (group) run_group_consume(options, ledger, g_stop);
    if (share) run_share_consume(options, ledger, g_stop);
  };

  bool produce_ok = true;
  if (options.concurrent && (group || share)) {
    std::thread consumer(consume);
    // The producer stays connected until the consumer is done: librdkafka
    // 2.15.1's mock cluster drops every share session on a broker when any
    // connection to that broker closes (rd_kafka_mock_connection_close ->
    // rd_kafka_mock_sharegrps_node_connection_closed, keyed by node id only),
    // so the producer leaving would fail the share consumer's next
    // acknowledgement with SHARE_SESSION_NOT_FOUND. A Kafka broker ends only
    // the sessions of the connection that closed.
    produce_ok = run_produce(options, ledger, g_stop, [&] { consumer.join(); });
    if (consumer.joinable()) consumer.join();
  } else {
    produce_ok = run_produce(options, ledger, g_stop);
    if (produce_ok) consume();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!options.timeline_file.empty() && !ledger.write_timeline(options.timeline_file))
    ledger.set_first_error("cannot write timeline " + options.timeline_file);
  const CheckVerdict verdict = judge(options, ledger, produce_ok);
  std::printf("%s\n", summary_json(options, ledger, verdict, seconds).c_str());
  std::fflush(stdout);
  close_client_log();
  return verdict.passed ? 0 : 1;
}
