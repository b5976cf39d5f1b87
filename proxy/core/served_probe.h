// proxy/core/served_probe.h: remembers which partitions of a forwarded request
// went to the broker at a lower leader epoch than the view's (the view
// doubted or disputed its own epoch, or observe mode let them through), so
// that the broker serving them without error can tell the view its epoch is
// wrong (MetadataView::learn_served); and which ones carry an epoch
// epochgate wrote in for a client that sent -1, so that the broker's epoch
// errors for those are answered as the client would have been answered
// without the epoch. Must never keep views into the request frame, or name
// a partition that was answered locally.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codec/kafka_errors.h"
#include "codec/messages/api_traits.h"
#include "policy/decision.h"
#include "policy/metadata_view.h"
#include "proxy/core/in_flight_queue.h"

namespace epochgate::proxy {

/// The in-flight entry's context for such a request.
struct ServedProbe : EntryContext {
  std::vector<policy::MetadataView::Served> partitions;
  /// Partitions whose CurrentLeaderEpoch epochgate injected (the client sent
  /// -1), with the epoch written in.
  std::vector<policy::MetadataView::Served> injected;
};

/// True when `c` is a probe that only names injected epochs (nothing to
/// learn from the broker serving a partition below the view's epoch).
inline bool only_injected(const EntryContext& c) {
  const auto* probe = dynamic_cast<const ServedProbe*>(&c);
  return probe != nullptr && probe->partitions.empty();
}

/// A probe for the partitions of `req` (decided as `d`) that go upstream at
/// an epoch below the view's or with an injected epoch, or null when there
/// are none.
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
      if (p.topic_index >= topics.size()) continue;
      const bool injected = p.injected();
      const bool forwarded =
          !p.answered_locally() && !injected && p.verdict != policy::Verdict::kHold;
      const bool below_view = forwarded && p.request_epoch >= 0 && p.view_epoch > p.request_epoch;
      if (!below_view && !injected) continue;
      const auto& t = topics[p.topic_index];
      policy::MetadataView::Served s;
      if (Q::by_id(version))
        s.topic.id = Q::id(t);
      else
        s.topic.name = std::string(Q::name(t));
      s.partition = p.partition;
      s.epoch = injected ? p.view_epoch : p.request_epoch;
      if (!probe) probe = std::make_unique<ServedProbe>();
      (injected ? probe->injected : probe->partitions).push_back(std::move(s));
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

/// Answers the broker's epoch errors for the partitions of `probe.injected`
/// in `m` as the broker would have answered the client's own request, which
/// carried no epoch: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH become
/// NOT_LEADER_OR_FOLLOWER (a broker that does not lead the partition at the
/// client's epoch -1 says that). Clients from before KIP-320 know only that
/// error and refresh their metadata on it; some end a read on any other
/// (kafka-go's Reader). Returns the partitions changed.
template <typename Resp>
uint32_t answer_injected_as_sent(const ServedProbe& probe, Resp& m, int16_t version) {
  using Q = codec::PartitionShape<Resp>;
  uint32_t changed = 0;
  if constexpr (Q::kPresent) {
    if (probe.injected.empty()) return 0;
    for (auto& t : Q::topics(m)) {
      for (auto& p : Q::partitions(t)) {
        const int16_t err = Q::error_code(p);
        if (err != codec::kErrFencedLeaderEpoch && err != codec::kErrUnknownLeaderEpoch) continue;
        for (const auto& s : probe.injected) {
          const bool same_topic =
              Q::by_id(version) ? s.topic.id == Q::id(t) : s.topic.name == Q::name(t);
          if (!same_topic || s.partition != Q::partition(p)) continue;
          Q::set_error_code(p, codec::kErrNotLeaderOrFollower);
          ++changed;
          break;
        }
      }
    }
  }
  return changed;
}

}  // namespace epochgate::proxy
