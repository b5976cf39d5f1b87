// codec/api_table.h: facts about every Kafka API key 0-94, one row each: name,
// valid and flexible versions (so frames of APIs that are not decoded can
// still be framed, matched by correlation id and given the right header
// version), and what epochgate does with each version: decoded or opaque,
// broker addresses carried (where), decided by the policy, learned from,
// KIP-951 hints carried, metric label. The only place these facts live: the
// table is generated from codec/schema/ (entity marks on fields, the rows of
// api_keys.schema) by codec/generator/generate.py (api_table.cc in the build
// tree). Compile-time counterparts: codec/messages/api_traits.h (generated).
#pragma once

#include <cstdint>

namespace epochgate::codec {

/// Versions [lo, hi]; empty when lo < 0. An open schema range ("10+") has
/// hi = 0x7fff, so versions newer than the schema keep the newest rule.
struct VersionRange {
  int16_t lo = -1;
  int16_t hi = -1;
  bool empty() const { return lo < 0; }
  bool contains(int16_t v) const { return lo >= 0 && v >= lo && v <= hi; }
};

/// Which rows of the fencing table apply to a decided API (policy/decide.h).
enum class PolicyRule : uint8_t {
  kNone,       ///< nothing checked: every partition passes
  kLeader,     ///< the target broker must be the leader (Produce, ShareFetch, ...)
  kFetch,      ///< epoch rows + "not leader and not a replica"; followers pass
  kEpoch,      ///< epoch rows only (ListOffsets, OffsetForLeaderEpoch)
  kPersister,  ///< LeaderEpoch older than the view fences; no hint, no injection
};

/// One API key. Versions are the union of Kafka 4.x and the pre-4.0 line.
struct ApiInfo {
  int16_t key;
  const char* name;           ///< Kafka's name, e.g. "Produce"
  int16_t min_version;        ///< lowest valid version in any Kafka line
  int16_t max_version;        ///< highest valid version in any Kafka line
  int16_t first_flexible;     ///< first flexible version, or -1 if none
  bool decoded;               ///< the codec has generated messages for this API
  const char* label;          ///< value of the `api` metric label ("produce")
  VersionRange addresses;     ///< response versions carrying broker host:port
  const char* addresses_where;  ///< which fields hold them ("Brokers[].Host (v0+)")
  VersionRange decided;       ///< request versions the policy decides
  VersionRange learned;       ///< response versions the view learns from
  VersionRange hints;         ///< response versions with CurrentLeader + NodeEndpoints
  PolicyRule rule;            ///< fencing rows applied to decided versions
  const char* group;          ///< mode group of policy.rules ("" when none)

  /// True when a response of `version` must be decoded: it carries broker
  /// addresses, it is ApiVersions (capped), or `policy` runs and learns from it.
  /// Anything else passes as its original bytes.
  bool response_decoded(int16_t version, bool policy) const;
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
