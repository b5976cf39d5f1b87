// metrics/api_labels.h: the bounded value set of the `api` metric label: Kafka's
// API names in snake_case for keys 0-94 (the `label` column of the API table,
// codec/api_table.h), "unknown" for anything else. Must never grow from wire
// input: a key outside the table maps to "unknown".
#pragma once

#include <cstdint>

namespace epochgate::metrics {

/// Number of API keys with their own label value (0..kApiLabelCount-1).
inline constexpr int kApiLabelCount = 95;

/// Label value for `api_key`: "produce", "fetch", ... (Kafka's request names in
/// snake_case), or "unknown" for keys outside 0..94. Returns a static string.
const char* api_label(int16_t api_key);

/// Slot of `api_key` in per-API child arrays: the key itself for 0..94, else
/// kApiLabelCount (the "unknown" slot).
inline int api_slot(int16_t api_key) {
  return (api_key >= 0 && api_key < kApiLabelCount) ? api_key : kApiLabelCount;
}

}  // namespace epochgate::metrics
