// policy/served_learning.cc: the view learning from requests a broker served
// at a lower epoch than the view's (MetadataView::learn_served). Must never
// look at a partition the broker refused, or at requests epochgate answered.
#include <string>

#include "policy/metadata_view.h"

namespace epochgate::policy {

LearnReport MetadataView::learn_served(const std::vector<Served>& served, int32_t node,
                                       uint64_t now_ms) {
  LearnReport rep;
  if (node < 0) return rep;
  auto snap = snapshot();
  for (const Served& s : served) {
    if (s.epoch < 0) continue;
    // Read-only first: only an entry still above the served epoch is news.
    const TopicEntry* t = !s.topic.name.empty() ? snap->find_topic(s.topic.name)
                                                 : snap->find_topic(s.topic.id);
    const PartitionEntry* e = t ? t->partition(s.partition) : nullptr;
    if (e == nullptr || !e->known || e->leader_epoch <= s.epoch) continue;
    // The one-report path of the epoch rules, as a report of (node, epoch)
    // by the serving broker: lower for the same topic id is tallied, and a
    // served report disputes at once.
    TopicRef ref = s.topic;
    if (ref.name.empty()) ref.name = t->name;
    rep.merge(learn_current_leader(ref, s.partition, node, s.epoch, now_ms, Source::kServed));
  }
  return rep;
}

}  // namespace epochgate::policy
