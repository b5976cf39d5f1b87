// policy/shape_support.h: helpers shared by the answer files (local answers,
// request rewrite, response merge, hint backfill), written once over the
// generated partition shapes (codec/messages/api_traits.h): the decision of
// one request partition, topic keys and the mode group of an API (hints:
// policy/hint_builder.h). Internal to policy/; no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "codec/messages/api_traits.h"
#include "policy/answer.h"
#include "policy/decision.h"
#include "policy/endpoint_resolver.h"
#include "policy/metadata_snapshot.h"
#include "policy/mode_resolver.h"

namespace epochgate::policy::detail {

/// The decision for (ti, pi), or nullptr when `d` does not describe this
/// request (a caller bug: then nothing is answered locally or injected).
inline const PartitionDecision* decision_at(const RequestDecision& d, size_t ti, size_t pi) {
  if (ti + 1 >= d.topic_start.size()) return nullptr;
  size_t at = d.topic_start[ti] + pi;
  if (at >= d.topic_start[ti + 1] || at >= d.partitions.size()) return nullptr;
  return &d.partitions[at];
}

inline bool answered_locally(const RequestDecision& d, size_t ti, size_t pi) {
  const PartitionDecision* pd = decision_at(d, ti, pi);
  return pd && pd->answered_locally();
}

inline std::string id_key(const codec::Uuid& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), id.size());
}

/// The key a topic is matched by between request and response: its TopicId
/// in versions that name topics by id, else its name.
template <class Shape>
std::string topic_key(const typename Shape::Topic& t, int16_t version) {
  return Shape::by_id(version) ? id_key(Shape::id(t)) : std::string(Shape::name(t));
}

/// Copies a request topic's identity (id or name, as `version` uses) into a
/// response topic.
template <class To, class From>
void copy_topic_identity(typename To::Topic& to, const typename From::Topic& from,
                         int16_t version) {
  if (From::by_id(version))
    To::set_id(to, From::id(from));
  else
    To::set_name(to, From::name(from));
}

/// The mode group of message M's API, from its schema row.
template <class M>
inline constexpr ApiGroup kGroupOf = api_group_of(codec::Api<M::kApiKey>::kGroup);

}  // namespace epochgate::policy::detail
