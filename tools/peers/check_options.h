// tools/peers: command-line options of epochgate-rdkafka-check. Parsing only;
// it must never touch the network.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace epochgate::peers {

/// Everything the check program can be asked to do, as parsed from argv.
struct CheckOptions {
  std::string bootstrap;           ///< bootstrap.servers for every client
  std::string topic;               ///< topic to produce to and consume from
  long messages = 10000;           ///< messages to produce (count mode)
  bool partitions_keyed = false;   ///< keyed messages spread over all partitions
  std::string acks = "all";        ///< "all", "1" or "0"
  bool idempotent = false;         ///< enable.idempotence
  std::string transactional;       ///< "", "commit" or "abort"
  std::string consume_group;       ///< consume back in this consumer group
  std::string share_group;         ///< consume back in this share group (KIP-932)
  double duration_s = 0;           ///< > 0: produce steadily this long instead of `messages`
  double rate = 0;                 ///< messages/s cap; 0 = as fast as possible (1000 in duration mode)
  bool concurrent = false;         ///< start consuming before producing, run both at once
  bool warmup = true;              ///< one flushed record per partition before timing starts
  bool markers = true;             ///< end-of-run marker per partition, so the consumer knows it saw everything
  bool allow_duplicates = false;   ///< duplicates are reported but do not fail the check
  double deadline_s = 60;          ///< consume deadline (s) after producing ends
  double produce_timeout_s = 60;   ///< flush / transaction deadline (s)
  int message_size = 100;          ///< value size in bytes (at least the header)
  std::string debug;               ///< librdkafka debug contexts, e.g. "broker,topic,msg,metadata"
  std::string log_file;            ///< librdkafka logs go here (stderr when empty)
  std::string timeline_file;       ///< per-message CSV: seq,partition,offset,broker,send_us,ack_us,error,consume_us
  std::string client_id = "epochgate-rdkafka-check";
  std::vector<std::pair<std::string, std::string>> properties;  ///< -X key=value for every client
  /// --resolve NAME=ADDRESS: host names (NAME, or *.DOMAIN for every name
  /// under DOMAIN) this process's clients dial at ADDRESS instead of asking
  /// the system resolver; TLS still sends and verifies the name itself.
  std::vector<std::pair<std::string, std::string>> resolve;
};

/// Parses argv into `out`. Returns false and fills `error` on bad input.
bool parse_check_options(int argc, char** argv, CheckOptions* out, std::string* error);

/// Multi-line usage text.
std::string check_usage();

}  // namespace epochgate::peers
