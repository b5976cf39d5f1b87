// proxy/app/app_readiness.cc: what /readyz answers and why: draining,
// listeners, a partition leader without a listener, the view not loaded
// or no broker reachable.
#include "proxy/app/app.h"

#include <map>
#include <string>

#include "metrics/admin_server.h"
#include "proxy/app/app_tls.h"
#include "proxy/app/refresher.h"

namespace epochgate::proxy {

metrics::Readiness App::readiness() const {
  metrics::Readiness r;
  if (draining_.load()) {
    r.ready = false;
    r.reason = "draining";
  } else if (!listeners_bound_) {
    r.ready = false;
    r.reason = "listeners not bound";
  } else if (std::string why = listeners_ ? listeners_->unready_reason() : ""; !why.empty()) {
    r.ready = false;
    r.reason = why;
  } else if (std::string why = unserved_leader_reason(); !why.empty()) {
    r.ready = false;
    r.reason = why;
  } else if (refresher_ && config_->refresher.enabled && !refresher_->loaded()) {
    r.ready = false;
    r.reason = "metadata view not loaded from any broker yet";
    if (std::string why = refresher_->last_round_error(); !why.empty()) r.reason += ": " + why;
  } else if (refresher_ && config_->refresher.enabled && !refresher_->reachable()) {
    r.ready = false;
    r.reason = "no upstream broker reachable";
    if (std::string why = refresher_->last_round_error(); !why.empty()) r.reason += ": " + why;
  }
  return r;
}

std::string App::unserved_leader_reason() const {
  if (!listeners_ || tls_->sni_mode()) return "";
  const auto refused = listeners_->refused_nodes();
  if (refused.empty()) return "";
  std::map<int32_t, Refusal> why(refused.begin(), refused.end());
  // The first partition each refused node leads, to name in the reason.
  std::map<int32_t, std::string> leads;
  view_.snapshot()->for_each_topic([&](const policy::TopicEntry& t) {
    for (size_t p = 0; p < t.partitions.size(); ++p) {
      const policy::PartitionEntry& e = t.partitions[p];
      if (!e.known || !why.count(e.leader_id) || leads.count(e.leader_id)) continue;
      leads[e.leader_id] = t.name + "[" + std::to_string(p) + "]";
    }
  });
  if (leads.empty()) return "";
  const auto& [node, partition] = *leads.begin();
  const auto& lim = listeners_->limits();
  std::string cause;
  switch (why[node]) {
    case Refusal::kMaxNodeId:
      cause = "its id is over broker_ports.max_node_id " + std::to_string(lim.max_node_id) +
              " (raise it, or give the node a broker_ports.map entry)";
      break;
    case Refusal::kMaxListeners:
      cause = "broker_ports.max_listeners " + std::to_string(lim.max_listeners) + " is reached";
      break;
    default:
      cause = "broker_ports.base " + std::to_string(lim.port_base) +
              " + its id is not a port (give it a broker_ports.map entry)";
      break;
  }
  std::string out = "broker node " + std::to_string(node) + " leads " + partition +
                    " but has no listener: " + cause;
  if (leads.size() > 1) out += " (and " + std::to_string(leads.size() - 1) + " more nodes)";
  return out;
}

}  // namespace epochgate::proxy
