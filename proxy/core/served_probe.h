// proxy/core/served_probe.h: remembers which partitions of a forwarded request
// went to the broker at a lower leader epoch than the view's (the view
// doubted or disputed its own epoch, or observe mode let them through), so
// that the broker serving them without error can tell the view its epoch is
// wrong (MetadataView::learn_served). Must never keep views into the request
// frame, or name a partition that was answered locally.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codec/messages/api_traits.h"
#include "policy/decision.h"
#include "policy/metadata_view.h"
#include "proxy/core/in_flight_queue.h"

namespace epochgate::proxy {

/// The in-flight entry's context for such a request.
struct ServedProbe : EntryContext {
  std::vector<policy::MetadataView::Served> partitions;
};

/// A probe for the partitions of `req` (decided as `d`) that go upstream at
/// an epoch below the view's, or null when there are none.
template <typename Req>
std::unique_ptr<ServedProbe> make_served_probe(const Req& req, int16_t version,
                                               const policy::RequestDecision& d) {
  using Q = codec::PartitionShape<Req>;
  if constexpr (!Q::kPresent || !Q::kHasEpoch) {
    return nullptr;
  } else {
    std::unique_ptr<ServedProbe> probe;
    const auto& topics = Q::topics(req);
    for (const auto& p : d.partitions) {
      const bool forwarded = !p.answered_locally() && !p.injected() &&
                             p.verdict != policy::Verdict::kHold;
      if (!forwarded || p.request_epoch < 0 || p.view_epoch <= p.request_epoch) continue;
      if (p.topic_index >= topics.size()) continue;
      const auto& t = topics[p.topic_index];
      policy::MetadataView::Served s;
      if (Q::by_id(version))
        s.topic.id = Q::id(t);
      else
        s.topic.name = std::string(Q::name(t));
      s.partition = p.partition;
      s.epoch = p.request_epoch;
      if (!probe) probe = std::make_unique<ServedProbe>();
      probe->partitions.push_back(std::move(s));
    }
    return probe;
  }
}

/// The probe's partitions that the broker's response `m` answers without
/// error (neither a top-level nor a partition error).
template <typename Resp>
std::vector<policy::MetadataView::Served> served_by(const ServedProbe& probe, const Resp& m,
                                                    int16_t version) {
  using Q = codec::PartitionShape<Resp>;
  std::vector<policy::MetadataView::Served> out;
  if constexpr (Q::kPresent) {
    if constexpr (Q::kHasTopError)
      if (Q::top_error(m) != 0) return out;
    for (const auto& t : Q::topics(m)) {
      for (const auto& p : Q::partitions(t)) {
        if (Q::error_code(p) != 0) continue;
        for (const auto& s : probe.partitions) {
          const bool same_topic =
              Q::by_id(version) ? s.topic.id == Q::id(t) : s.topic.name == Q::name(t);
          if (same_topic && s.partition == Q::partition(p)) out.push_back(s);
        }
      }
    }
  }
  return out;
}

}  // namespace epochgate::proxy
