// tools/mockcluster: parses command lines and applies them to the mock
// cluster. Malformed input yields "ERR <reason>", never a crash or an exit.
#include "command_shell.h"

#include <librdkafka/rdkafka.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string_view>
#include <vector>

namespace epochgate::mockcluster {
namespace {

struct ApiName {
  std::string_view name;
  int16_t key;
};

// Names accepted in place of numeric API keys (Kafka protocol api_key values).
constexpr ApiName kApiNames[] = {
    {"Produce", 0},           {"Fetch", 1},
    {"ListOffsets", 2},       {"Metadata", 3},
    {"OffsetCommit", 8},      {"OffsetFetch", 9},
    {"FindCoordinator", 10},  {"JoinGroup", 11},
    {"Heartbeat", 12},        {"LeaveGroup", 13},
    {"SyncGroup", 14},        {"ApiVersions", 18},
    {"InitProducerId", 22},   {"OffsetForLeaderEpoch", 23},
    {"AddPartitionsToTxn", 24}, {"AddOffsetsToTxn", 25},
    {"EndTxn", 26},           {"TxnOffsetCommit", 28},
    {"ConsumerGroupHeartbeat", 68}, {"ShareGroupHeartbeat", 76},
    {"ShareFetch", 78},       {"ShareAcknowledge", 79},
};

bool parse_int(const std::string& text, long min, long max, long* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max) return false;
  *out = value;
  return true;
}

bool parse_api_key(const std::string& text, int16_t* out) {
  long value = 0;
  if (parse_int(text, 0, SHRT_MAX, &value)) {
    *out = static_cast<int16_t>(value);
    return true;
  }
  for (const ApiName& api : kApiNames) {
    if (api.name == text) {
      *out = api.key;
      return true;
    }
  }
  return false;
}

// Accepts a numeric Kafka error code or a librdkafka error name without the
// RD_KAFKA_RESP_ERR_ prefix (e.g. NOT_LEADER_FOR_PARTITION, _TRANSPORT).
bool parse_error_code(const std::string& text, int* out) {
  long value = 0;
  if (parse_int(text, INT_MIN, INT_MAX, &value)) {
    *out = static_cast<int>(value);
    return true;
  }
  if (text == "NOT_LEADER_OR_FOLLOWER") {
    *out = RD_KAFKA_RESP_ERR_NOT_LEADER_OR_FOLLOWER;
    return true;
  }
  const rd_kafka_err_desc* descs = nullptr;
  size_t count = 0;
  rd_kafka_get_err_descs(&descs, &count);
  for (size_t i = 0; i < count; ++i) {
    if (descs[i].name != nullptr && text == descs[i].name) {
      *out = descs[i].code;
      return true;
    }
  }
  return false;
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

std::string reply(const OpResult& result) {
  return result.ok() ? "OK" : "ERR " + result.error;
}

}  // namespace

std::string command_summary() {
  return "leader T P B | leader-timed T P B | follower T P B | down B | up B | rtt B MS | rack B RACK | "
         "add-broker B | advertise B HOST PORT | push-leader-response T P LEADER EPOCH | create T PARTS RF | delete T | "
         "apiversion API MIN MAX | push-errors API ERR [COUNT] | "
         "push-broker-errors B API ERR [COUNT] [RTT_MS] | "
         "push-partition-errors T P API ERR [COUNT] | clear-errors API | controller B | "
         "coordinator group|transaction KEY B | rebalance-delay MS | "
         "share-offset-reset earliest|latest | "
         "share-isolation read_committed|read_uncommitted | track start|stop|clear|dump | brokers | help | quit";
}

std::string CommandShell::execute(const std::string& line, bool* quit) {
  std::istringstream in(line);
  std::vector<std::string> args;
  for (std::string word; in >> word;) args.push_back(word);
  if (args.empty()) return "ERR empty command";
  const std::string& cmd = args[0];
  const size_t argc = args.size() - 1;

  long a = 0, b = 0, c = 0, d = 0;
  int16_t api = 0;
  int err = 0;
  auto usage = [&](const char* text) { return std::string("ERR usage: ") + text; };

  if (cmd == "quit" || cmd == "exit") {
    *quit = true;
    return "OK bye";
  }
  if (cmd == "help") return "OK " + command_summary();
  if (cmd == "brokers") return "OK " + cluster_.bootstrap();

  if (cmd == "leader" || cmd == "follower") {
    if (argc != 3 || !parse_int(args[2], 0, INT_MAX, &a) || !parse_int(args[3], -1, INT_MAX, &b))
      return usage("leader|follower TOPIC PARTITION BROKER_ID");
    return reply(cmd == "leader" ? cluster_.set_leader(args[1], a, b)
                                 : cluster_.set_follower(args[1], a, b));
  }
  if (cmd == "leader-timed") {
    // The move bracketed by CLOCK_MONOTONIC (the clock Python's
    // time.monotonic_ns() and the bench's producers read) taken right around
    // the synchronous rd_kafka_mock_partition_set_leader call, so a bench can
    // date the move without counting the pipe and the shell's scheduling.
    if (argc != 3 || !parse_int(args[2], 0, INT_MAX, &a) || !parse_int(args[3], -1, INT_MAX, &b))
      return usage("leader-timed TOPIC PARTITION BROKER_ID");
    const int64_t before = monotonic_ns();
    const OpResult result = cluster_.set_leader(args[1], a, b);
    const int64_t after = monotonic_ns();
    if (!result.ok()) return reply(result);
    return "OK " + std::to_string(before) + " " + std::to_string(after);
  }
  if (cmd == "down" || cmd == "up") {
    if (argc != 1 || !parse_int(args[1], -1, INT_MAX, &a)) return usage("down|up BROKER_ID");
    return reply(cmd == "down" ? cluster_.set_down(a) : cluster_.set_up(a));
  }
  if (cmd == "rtt") {
    if (argc != 2 || !parse_int(args[1], -1, INT_MAX, &a) || !parse_int(args[2], 0, INT_MAX, &b))
      return usage("rtt BROKER_ID MS");
    return reply(cluster_.set_rtt(a, b));
  }
  if (cmd == "rack") {
    if (argc != 2 || !parse_int(args[1], -1, INT_MAX, &a)) return usage("rack BROKER_ID RACK");
    return reply(cluster_.set_rack(a, args[2]));
  }
  if (cmd == "add-broker") {
    if (argc != 1 || !parse_int(args[1], 0, INT_MAX, &a)) return usage("add-broker BROKER_ID");
    return reply(cluster_.add_broker(a));
  }
  if (cmd == "advertise") {
    if (argc != 3 || !parse_int(args[1], 1, INT_MAX, &a) || !parse_int(args[3], 1, 65535, &b))
      return usage("advertise BROKER_ID HOST PORT");
    return reply(cluster_.advertise(a, args[2], b));
  }
  if (cmd == "push-leader-response") {
    if (argc != 4 || !parse_int(args[2], 0, INT_MAX, &a) || !parse_int(args[3], -1, INT_MAX, &b) ||
        !parse_int(args[4], -1, INT_MAX, &c))
      return usage("push-leader-response TOPIC PARTITION LEADER_ID LEADER_EPOCH");
    return reply(cluster_.push_leader_response(args[1], a, b, c));
  }
  if (cmd == "create") {
    if (argc != 3 || !parse_int(args[2], 1, 100000, &a) || !parse_int(args[3], 1, 1000, &b))
      return usage("create TOPIC PARTITIONS REPLICATION_FACTOR");
    return reply(cluster_.create_topic(args[1], a, b));
  }
  if (cmd == "delete") {
    if (argc != 1) return usage("delete TOPIC");
    return reply(cluster_.delete_topic(args[1]));
  }
  if (cmd == "apiversion") {
    if (argc != 3 || !parse_api_key(args[1], &api) || !parse_int(args[2], -1, SHRT_MAX, &a) ||
        !parse_int(args[3], -1, SHRT_MAX, &b))
      return usage("apiversion API_KEY MIN MAX");
    return reply(cluster_.set_apiversion(api, a, b));
  }
  if (cmd == "push-errors") {
    if ((argc != 2 && argc != 3) || !parse_api_key(args[1], &api) ||
        !parse_error_code(args[2], &err) || (argc == 3 && !parse_int(args[3], 1, 100000, &a)))
      return usage("push-errors API_KEY ERROR_CODE [COUNT]");
    cluster_.push_errors(api, err, argc == 3 ? a : 1);
    return "OK";
  }
  if (cmd == "push-broker-errors") {
    if (argc < 3 || argc > 5 || !parse_int(args[1], 0, INT_MAX, &a) ||
        !parse_api_key(args[2], &api) || !parse_error_code(args[3], &err) ||
        (argc >= 4 && !parse_int(args[4], 1, 100000, &b)) ||
        (argc == 5 && !parse_int(args[5], 0, INT_MAX, &c)))
      return usage("push-broker-errors BROKER_ID API_KEY ERROR_CODE [COUNT] [RTT_MS]");
    return reply(cluster_.push_broker_errors(a, api, err, argc >= 4 ? b : 1, argc == 5 ? c : 0));
  }
  if (cmd == "push-partition-errors") {
    if (argc < 4 || argc > 5 || !parse_int(args[2], 0, INT_MAX, &a) ||
        !parse_api_key(args[3], &api) || !parse_error_code(args[4], &err) ||
        (argc == 5 && !parse_int(args[5], 1, 100000, &d)))
      return usage("push-partition-errors TOPIC PARTITION API_KEY ERROR_CODE [COUNT]");
    return reply(cluster_.push_partition_errors(args[1], a, api, err, argc == 5 ? d : 1));
  }
  if (cmd == "clear-errors") {
    if (argc != 1 || !parse_api_key(args[1], &api)) return usage("clear-errors API_KEY");
    cluster_.clear_errors(api);
    return "OK";
  }
  if (cmd == "controller") {
    if (argc != 1 || !parse_int(args[1], -1, INT_MAX, &a)) return usage("controller BROKER_ID");
    cluster_.set_controller(a);
    return "OK";
  }
  if (cmd == "coordinator") {
    if (argc != 3 || (args[1] != "group" && args[1] != "transaction") ||
        !parse_int(args[3], -1, INT_MAX, &a))
      return usage("coordinator group|transaction KEY BROKER_ID");
    return reply(cluster_.set_coordinator(args[1], args[2], a));
  }
  if (cmd == "rebalance-delay") {
    if (argc != 1 || !parse_int(args[1], 0, INT_MAX, &a)) return usage("rebalance-delay MS");
    cluster_.set_rebalance_delay_ms(a);
    return "OK";
  }
  if (cmd == "share-offset-reset") {
    if (argc != 1 || (args[1] != "earliest" && args[1] != "latest"))
      return usage("share-offset-reset earliest|latest");
    cluster_.set_share_offset_reset(args[1] == "earliest" ? 1 : 0);
    return "OK";
  }
  if (cmd == "share-isolation") {
    if (argc != 1 || (args[1] != "read_committed" && args[1] != "read_uncommitted"))
      return usage("share-isolation read_committed|read_uncommitted");
    cluster_.set_share_isolation(args[1] == "read_committed" ? 1 : 0);
    return "OK";
  }
  if (cmd == "track") {
    if (argc != 1) return usage("track start|stop|clear|dump");
    if (args[1] == "start") {
      cluster_.start_tracking();
    } else if (args[1] == "stop") {
      cluster_.stop_tracking();
    } else if (args[1] == "clear") {
      cluster_.clear_tracking();
    } else if (args[1] == "dump") {
      std::string out = "OK";
      for (const std::string& item : cluster_.tracked_counts()) out += " " + item;
      return out;
    } else {
      return usage("track start|stop|clear|dump");
    }
    return "OK";
  }
  return "ERR unknown command '" + cmd + "' (try help)";
}

}  // namespace epochgate::mockcluster
