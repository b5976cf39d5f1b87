// tools/peers: pass criteria and JSON rendering for epochgate-rdkafka-check.
#include "check_report.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace epochgate::peers {
namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string ms(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", value);
  return buf;
}

// Nearest-rank percentile of sorted samples (µs), in ms.
double percentile_ms(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return static_cast<double>(sorted[rank - 1]) / 1000.0;
}

std::string int_map(const std::map<int32_t, long>& m) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out += ",";
    first = false;
    out += "\"" + std::to_string(k) + "\":" + std::to_string(v);
  }
  return out + "}";
}

}  // namespace

CheckVerdict judge(const CheckOptions& o, const RunLedger& ledger, bool produce_ok) {
  const bool consuming = !o.consume_group.empty() || !o.share_group.empty();
  const ConsumeCounts c = ledger.counts();
  auto fail = [](const std::string& why) { return CheckVerdict{false, why}; };
  if (!produce_ok) return fail("producer phase failed");
  if (ledger.failed() > 0) return fail(std::to_string(ledger.failed()) + " messages failed");
  if (ledger.acked() != ledger.sent()) return fail("not every message was acknowledged");
  if (ledger.sent() == 0 && o.duration_s <= 0 && o.messages > 0) return fail("nothing produced");
  if (!consuming) return {true, ""};
  if (ledger.missing() > 0) return fail(std::to_string(ledger.missing()) + " acked messages missing");
  if (c.unexpected > 0) return fail(std::to_string(c.unexpected) + " unexpected records visible");
  if (c.out_of_order > 0 && o.share_group.empty())
    return fail(std::to_string(c.out_of_order) + " records out of order");
  if (c.misplaced > 0) return fail(std::to_string(c.misplaced) + " records at another partition/offset");
  if (c.duplicates > 0 && !o.allow_duplicates)
    return fail(std::to_string(c.duplicates) + " duplicates");
  if (c.ack_failures > 0) return fail(std::to_string(c.ack_failures) + " share acknowledgements failed");
  if (o.transactional == "abort" && !ledger.markers_complete())
    return fail("abort check inconclusive: end-of-run markers not all seen");
  return {true, ""};
}

std::string summary_json(const CheckOptions& o, const RunLedger& ledger,
                         const CheckVerdict& verdict, double seconds) {
  std::vector<int64_t> lat = ledger.latencies_us();
  std::sort(lat.begin(), lat.end());
  const ConsumeCounts c = ledger.counts();
  std::string mode = o.transactional.empty() ? (o.idempotent ? "idempotent" : "plain")
                                             : "transactional-" + o.transactional;
  mode += "/acks=" + o.acks;
  if (!o.consume_group.empty()) mode += "/group";
  if (!o.share_group.empty()) mode += "/share";
  std::string out = "{";
  out += "\"passed\":" + std::string(verdict.passed ? "true" : "false");
  out += ",\"reason\":" + json_string(verdict.reason);
  out += ",\"mode\":" + json_string(mode);
  out += ",\"run_id\":" + json_string(ledger.run_id());
  out += ",\"produced\":" + std::to_string(ledger.sent());
  out += ",\"acked\":" + std::to_string(ledger.acked());
  out += ",\"failed\":" + std::to_string(ledger.failed());
  out += ",\"consumed\":" + std::to_string(c.consumed);
  out += ",\"duplicates\":" + std::to_string(c.duplicates);
  out += ",\"missing\":" + std::to_string(ledger.missing());
  out += ",\"out_of_order\":" + std::to_string(c.out_of_order);
  out += ",\"misplaced\":" + std::to_string(c.misplaced);
  out += ",\"unexpected\":" + std::to_string(c.unexpected);
  out += ",\"redelivered\":" + std::to_string(c.redelivered);
  out += ",\"ack_failures\":" + std::to_string(c.ack_failures);
  out += ",\"consume_errors\":" + std::to_string(c.consume_errors);
  out += ",\"seconds\":" + ms(seconds);
  out += ",\"first_error\":" + json_string(ledger.first_error());
  out += ",\"latency_ms\":{\"p50\":" + ms(percentile_ms(lat, 50)) +
         ",\"p99\":" + ms(percentile_ms(lat, 99)) +
         ",\"max\":" + ms(lat.empty() ? 0 : static_cast<double>(lat.back()) / 1000.0) + "}";
  out += ",\"warmup_ms\":" + ms(ledger.warmup_ms());
  out += ",\"acked_by_partition\":" + int_map(ledger.acked_by_partition());
  out += ",\"acked_by_broker\":" + int_map(ledger.acked_by_broker());
  return out + "}";
}

}  // namespace epochgate::peers
