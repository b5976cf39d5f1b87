// tools/peers: the consuming half of epochgate-rdkafka-check: reads the run's
// records back through a consumer group or a share group (KIP-932) and feeds
// them to the ledger. Never produces.
#pragma once

#include <atomic>

#include "check_options.h"
#include "run_ledger.h"

namespace epochgate::peers {

/// Consumes `options.topic` in consumer group `options.consume_group` until
/// the ledger is complete (then a short linger to catch duplicates), `stop`
/// is set, or `options.deadline_s` has passed since production finished.
/// Returns false if the consumer could not be created.
bool run_group_consume(const CheckOptions& options, RunLedger& ledger,
                       const std::atomic<bool>& stop);

/// Same with librdkafka's share consumer (rd_kafka_share_*) in share group
/// `options.share_group`, acknowledging every record with ACCEPT.
bool run_share_consume(const CheckOptions& options, RunLedger& ledger,
                       const std::atomic<bool>& stop);

}  // namespace epochgate::peers
