// tools/peers: librdkafka configuration for the check program. Settings here
// are the ones a verification client needs to be strict (earliest offsets,
// read_committed, explicit share acknowledgements); everything else is left
// at librdkafka's defaults so scenario tests see stock client behaviour.
#include "client_config.h"

#include <librdkafka/rdkafka.h>
#include <netdb.h>
#include <strings.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace epochgate::peers {
namespace {

std::mutex g_log_mutex;
FILE* g_log = nullptr;

void log_line(const rd_kafka_t* rk, int level, const char* fac, const char* buf) {
  const double t = std::chrono::duration<double>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  std::lock_guard<std::mutex> lock(g_log_mutex);
  FILE* out = g_log != nullptr ? g_log : stderr;
  std::fprintf(out, "%.6f %d %s %s: %s\n", t, level, rk != nullptr ? rd_kafka_name(rk) : "-",
               fac, buf);
}

// --resolve rules, shared by every client of the run (set before the first
// client exists, read-only afterwards).
const std::vector<std::pair<std::string, std::string>>* g_resolve = nullptr;

bool name_matches(const std::string& pattern, const char* node) {
  if (pattern.size() > 2 && pattern[0] == '*' && pattern[1] == '.') {
    const size_t n = std::strlen(node), suffix = pattern.size() - 1;
    return n > suffix && strcasecmp(node + n - suffix, pattern.c_str() + 1) == 0;
  }
  return strcasecmp(pattern.c_str(), node) == 0;
}

// librdkafka's resolve_cb: a name covered by a --resolve rule is looked up as
// its rule's address; anything else as usual. Called with all of node,
// service and hints null to free an earlier answer.
int resolve(const char* node, const char* service, const struct addrinfo* hints,
            struct addrinfo** res, void*) {
  if (node == nullptr && service == nullptr && hints == nullptr) {
    if (*res != nullptr) freeaddrinfo(*res);
    return 0;
  }
  if (node != nullptr && g_resolve != nullptr) {
    for (const auto& [pattern, address] : *g_resolve) {
      if (name_matches(pattern, node)) return getaddrinfo(address.c_str(), service, hints, res);
    }
  }
  return getaddrinfo(node, service, hints, res);
}

}  // namespace

bool open_client_log(const CheckOptions& options, std::string* error) {
  if (options.log_file.empty()) return true;
  g_log = std::fopen(options.log_file.c_str(), "a");
  if (g_log == nullptr) {
    *error = "cannot open log file " + options.log_file;
    return false;
  }
  std::setvbuf(g_log, nullptr, _IOLBF, 0);
  return true;
}

void close_client_log() {
  std::lock_guard<std::mutex> lock(g_log_mutex);
  if (g_log != nullptr) std::fclose(g_log);
  g_log = nullptr;
}

rd_kafka_conf_s* make_client_conf(const CheckOptions& options, ClientRole role,
                                  const std::string& run_id, std::string* error) {
  std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", options.bootstrap},
      {"client.id", options.client_id},
  };
  if (!options.debug.empty()) props.emplace_back("debug", options.debug);
  switch (role) {
    case ClientRole::kProducer:
      props.emplace_back("acks", options.acks == "all" ? "all" : options.acks);
      props.emplace_back("enable.idempotence",
                         options.idempotent || !options.transactional.empty() ? "true" : "false");
      props.emplace_back("linger.ms", "5");
      if (!options.transactional.empty())
        props.emplace_back("transactional.id", "epochgate-check-" + run_id);
      break;
    case ClientRole::kMarkerProducer:
      props.emplace_back("acks", "all");
      break;
    case ClientRole::kConsumer:
      props.emplace_back("group.id", options.consume_group);
      props.emplace_back("auto.offset.reset", "earliest");
      props.emplace_back("isolation.level", "read_committed");
      props.emplace_back("enable.partition.eof", "false");
      break;
    case ClientRole::kShareConsumer:
      props.emplace_back("group.id", options.share_group);
      props.emplace_back("share.acknowledgement.mode", "explicit");
      break;
  }
  for (const auto& kv : options.properties) props.push_back(kv);

  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char errstr[512];
  for (const auto& [key, value] : props) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
      *error = key + ": " + errstr;
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
  }
  rd_kafka_conf_set_log_cb(conf, log_line);
  if (!options.resolve.empty()) {
    g_resolve = &options.resolve;
    rd_kafka_conf_set_resolve_cb(conf, resolve);
  }
  return conf;
}

}  // namespace epochgate::peers
