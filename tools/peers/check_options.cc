// tools/peers: argv parsing for epochgate-rdkafka-check. Rejects anything it
// does not understand rather than guessing.
#include "check_options.h"

#include <cerrno>
#include <cstdlib>

namespace epochgate::peers {
namespace {

bool to_long(const std::string& text, long* out) {
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0') return false;
  *out = value;
  return true;
}

bool to_double(const std::string& text, double* out) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0') return false;
  *out = value;
  return true;
}

}  // namespace

std::string check_usage() {
  return "usage: epochgate-rdkafka-check --bootstrap HOST:PORT[,...] --topic TOPIC [options]\n"
         "  --messages N              messages to produce (default 10000)\n"
         "  --partitions-keyed        keyed messages spread over the topic's partitions\n"
         "  --acks all|1|0            producer acks (default all)\n"
         "  --idempotent              enable.idempotence=true\n"
         "  --transactional commit|abort  produce in one transaction, then commit or abort\n"
         "  --consume-group G         consume back in consumer group G and verify\n"
         "  --share-group G           consume back in share group G (KIP-932), ack every record\n"
         "  --duration-s S            produce steadily for S seconds instead of N messages\n"
         "  --rate R                  cap produce rate at R msg/s (duration mode default 1000)\n"
         "  --concurrent              consume while producing\n"
         "  --no-markers              no end-of-run marker records (consumer stops on count)\n"
         "  --no-warmup               no warm-up record per partition before timing starts\n"
         "  --allow-duplicates        report duplicates without failing\n"
         "  --deadline-s S            consume deadline after producing ends (default 60)\n"
         "  --produce-timeout-s S     flush / transaction deadline (default 60)\n"
         "  --message-size BYTES      value size (default 100)\n"
         "  --debug CTX               librdkafka debug contexts (e.g. broker,topic,msg,metadata)\n"
         "  --log-file FILE           librdkafka log destination (default stderr;\n"
         "                            epochgate-rdkafka-check.log when --debug is given)\n"
         "  --timeline FILE           per-message CSV (seq,partition,offset,broker,send_us,ack_us,error,\n"
         "                            consume_us: when a consumer first received it, 0 never)\n"
         "  --client-id ID            client.id (default epochgate-rdkafka-check)\n"
         "  -X key=value              extra librdkafka property for every client\n"
         "  --resolve NAME=ADDRESS    dial NAME (or every name under *.DOMAIN) at ADDRESS\n"
         "                            (librdkafka's resolve_cb; TLS still uses NAME)\n"
         "Prints one JSON summary line on stdout; exit 0 only if the check passed.\n";
}

bool parse_check_options(int argc, char** argv, CheckOptions* out, std::string* error) {
  CheckOptions& o = *out;
  bool duration_rate_default = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    auto need = [&]() {
      if (i + 1 >= argc) {
        *error = arg + " needs a value";
        return false;
      }
      value = argv[++i];
      return true;
    };
    long n = 0;
    if (arg == "--bootstrap") {
      if (!need()) return false;
      o.bootstrap = value;
    } else if (arg == "--topic") {
      if (!need()) return false;
      o.topic = value;
    } else if (arg == "--messages") {
      if (!need() || !to_long(value, &n) || n < 0) return *error = "bad --messages", false;
      o.messages = n;
    } else if (arg == "--partitions-keyed") {
      o.partitions_keyed = true;
    } else if (arg == "--acks") {
      if (!need() || (value != "all" && value != "1" && value != "0" && value != "-1"))
        return *error = "--acks must be all, 1 or 0", false;
      o.acks = value == "-1" ? "all" : value;
    } else if (arg == "--idempotent") {
      o.idempotent = true;
    } else if (arg == "--transactional") {
      if (!need() || (value != "commit" && value != "abort"))
        return *error = "--transactional must be commit or abort", false;
      o.transactional = value;
    } else if (arg == "--consume-group") {
      if (!need()) return false;
      o.consume_group = value;
    } else if (arg == "--share-group") {
      if (!need()) return false;
      o.share_group = value;
    } else if (arg == "--duration-s") {
      if (!need() || !to_double(value, &o.duration_s) || o.duration_s < 0)
        return *error = "bad --duration-s", false;
    } else if (arg == "--rate") {
      if (!need() || !to_double(value, &o.rate) || o.rate < 0) return *error = "bad --rate", false;
      duration_rate_default = false;
    } else if (arg == "--concurrent") {
      o.concurrent = true;
    } else if (arg == "--no-warmup") {
      o.warmup = false;
    } else if (arg == "--no-markers") {
      o.markers = false;
    } else if (arg == "--allow-duplicates") {
      o.allow_duplicates = true;
    } else if (arg == "--deadline-s") {
      if (!need() || !to_double(value, &o.deadline_s) || o.deadline_s <= 0)
        return *error = "bad --deadline-s", false;
    } else if (arg == "--produce-timeout-s") {
      if (!need() || !to_double(value, &o.produce_timeout_s) || o.produce_timeout_s <= 0)
        return *error = "bad --produce-timeout-s", false;
    } else if (arg == "--message-size") {
      if (!need() || !to_long(value, &n) || n < 0 || n > 10 * 1024 * 1024)
        return *error = "bad --message-size", false;
      o.message_size = static_cast<int>(n);
    } else if (arg == "--debug") {
      if (!need()) return false;
      o.debug = value;
    } else if (arg == "--log-file") {
      if (!need()) return false;
      o.log_file = value;
    } else if (arg == "--timeline") {
      if (!need()) return false;
      o.timeline_file = value;
    } else if (arg == "--resolve") {
      if (!need()) return false;
      const auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
        return *error = "--resolve needs NAME=ADDRESS", false;
      o.resolve.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else if (arg == "--client-id") {
      if (!need()) return false;
      o.client_id = value;
    } else if (arg == "-X") {
      if (!need()) return false;
      const auto eq = value.find('=');
      if (eq == std::string::npos || eq == 0) return *error = "-X needs key=value", false;
      o.properties.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    } else {
      *error = "unknown argument " + arg;
      return false;
    }
  }
  if (o.bootstrap.empty() || o.topic.empty()) {
    *error = "--bootstrap and --topic are required";
    return false;
  }
  if (!o.consume_group.empty() && !o.share_group.empty()) {
    *error = "--consume-group and --share-group are exclusive";
    return false;
  }
  if (!o.transactional.empty() && o.acks != "all") {
    *error = "--transactional needs --acks all";
    return false;
  }
  if (o.duration_s > 0 && duration_rate_default) o.rate = 1000;
  if (!o.debug.empty() && o.log_file.empty()) o.log_file = "epochgate-rdkafka-check.log";
  return true;
}

}  // namespace epochgate::peers
