// codec/api_table.h: facts about every Kafka API key 0-94 (name, valid and
// flexible versions), so frames of APIs that are not decoded can still be
// framed, matched by correlation id and given the right header version.
// The table itself is generated from codec/schema/api_keys.schema by
// codec/generator/generate.py (api_table.cc in the build tree).
#pragma once

#include <cstdint>

namespace epochgate::codec {

/// One API key. Versions are the union of Kafka 4.x and the pre-4.0 line.
struct ApiInfo {
  int16_t key;
  const char* name;           ///< Kafka's name, e.g. "Produce"
  int16_t min_version;        ///< lowest valid version in any Kafka line
  int16_t max_version;        ///< highest valid version in any Kafka line
  int16_t first_flexible;     ///< first flexible version, or -1 if none
  bool decoded;               ///< the codec has generated messages for this API
};

/// Highest API key in the table (DescribeShareGroupOffsets etc. end at 94).
inline constexpr int16_t kMaxApiKey = 94;

/// Facts for `key`, or nullptr when the key is outside 0..kMaxApiKey.
const ApiInfo* api_info(int16_t key);

/// True when (key, version) uses flexible encoding (compact types, tagged fields).
/// Unknown keys are treated as not flexible.
bool is_flexible(int16_t key, int16_t version);

/// Request header version for (key, version): 2 if flexible, else 1, and 0
/// for ControlledShutdown v0 (the only request without a client id).
int request_header_version(int16_t key, int16_t version);

/// Response header version: 1 if flexible, else 0; ApiVersions is always 0 (KIP-511).
int response_header_version(int16_t key, int16_t version);

}  // namespace epochgate::codec
