// tools/peers: the producing half of epochgate-rdkafka-check. Produces the
// run's records (plain, idempotent or transactional), records each delivery
// report in the ledger and writes the end-of-run markers. Never consumes.
#pragma once

#include <atomic>
#include <functional>

#include "check_options.h"
#include "run_ledger.h"

namespace epochgate::peers {

/// Produces according to `options`. Always calls ledger.finish_producing()
/// before returning, even on failure, so a concurrent consumer can finish.
/// `stop` ends a duration/count run early (SIGTERM). Returns false when the
/// producer could not be created or a fatal/transaction error occurred (the
/// reason is in ledger.first_error()). `before_close` (may be empty) runs
/// after producing and before the producer closes its connections.
bool run_produce(const CheckOptions& options, RunLedger& ledger, const std::atomic<bool>& stop,
                 const std::function<void()>& before_close = {});

}  // namespace epochgate::peers
