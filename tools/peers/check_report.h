// tools/peers: turns a finished RunLedger into the check's verdict and its
// one-line JSON summary. Pure computation: no I/O except the caller printing.
#pragma once

#include <string>

#include "check_options.h"
#include "run_ledger.h"

namespace epochgate::peers {

/// Verdict of one run.
struct CheckVerdict {
  bool passed = false;
  std::string reason;  ///< empty when passed, else the first failed criterion
};

/// Applies the pass criteria: nothing failed to produce, and when consuming:
/// nothing missing, out of order, misplaced or unexpected, no failed share
/// acknowledgements, no duplicates unless allowed. `produce_ok` is the
/// producer phase's own result (transactions, flush).
CheckVerdict judge(const CheckOptions& options, const RunLedger& ledger, bool produce_ok);

/// One JSON object on one line: produced, acked, failed, consumed, duplicates,
/// missing, out_of_order, misplaced, unexpected, redelivered, ack_failures,
/// consume_errors, seconds (wall, s), first_error, latency_ms {p50,p99,max}
/// (delivery-report latency in ms, measured after the warm-up records),
/// warmup_ms, acked_by_partition, acked_by_broker, passed, reason.
std::string summary_json(const CheckOptions& options, const RunLedger& ledger,
                         const CheckVerdict& verdict, double seconds);

}  // namespace epochgate::peers
