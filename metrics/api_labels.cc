// metrics/api_labels.cc: API key -> label value, read from the API table
// generated from codec/schema/api_keys.schema (Kafka's request names,
// snake_cased), so the label set stays bounded whatever clients send.
#include "metrics/api_labels.h"

#include "codec/api_table.h"

namespace epochgate::metrics {

static_assert(kApiLabelCount == codec::kMaxApiKey + 1, "one label per key of the API table");

const char* api_label(int16_t api_key) {
  const int slot = api_slot(api_key);
  return slot == kApiLabelCount ? "unknown" : codec::api_info(static_cast<int16_t>(slot))->label;
}

}  // namespace epochgate::metrics
