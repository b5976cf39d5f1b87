// tools/peers: builds librdkafka configurations for the check program's
// clients (producer, consumer, share consumer) and routes librdkafka logs to
// one file. Must never enable anything the options did not ask for beyond the
// few settings a verification client needs (documented in client_config.cc).
#pragma once

#include <string>

#include "check_options.h"

struct rd_kafka_conf_s;

namespace epochgate::peers {

/// Which client a configuration is for.
enum class ClientRole { kProducer, kMarkerProducer, kConsumer, kShareConsumer };

/// Opens the log destination named by the options (stderr when empty).
/// Returns false and fills `error` if the file cannot be opened.
bool open_client_log(const CheckOptions& options, std::string* error);
/// Flushes and closes the log file opened by open_client_log.
void close_client_log();

/// Returns a new rd_kafka_conf_t for `role`, or nullptr with `error` set when
/// librdkafka rejects a property (e.g. a bad -X key).
rd_kafka_conf_s* make_client_conf(const CheckOptions& options, ClientRole role,
                                  const std::string& run_id, std::string* error);

}  // namespace epochgate::peers
