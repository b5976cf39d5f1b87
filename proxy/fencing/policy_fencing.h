// proxy/fencing/policy_fencing.h: FencingHooks backed by policy/: feeds the metadata
// view from every response that passes, asks policy/ to decide on requests,
// and turns its decisions into frames (local answers, rewritten requests,
// merged responses, backfilled hints). Thread-safe: one instance serves every
// worker; per-request state lives in the EntryContext attached to a request.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "config/config.h"
#include "metrics/logging.h"
#include "policy/compiled_policy.h"
#include "policy/decision.h"
#include "policy/endpoint_resolver.h"
#include "policy/metadata_view.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/refresh_requests.h"

namespace epochgate::metrics {
class ProxyMetrics;
}

namespace epochgate::proxy {


/// The fencing policy wired into sessions.
class PolicyFencing : public FencingHooks {
 public:
  /// `endpoints` gives epochgate's address for a node id (a lookup; it never binds).
  PolicyFencing(policy::MetadataView& view, const policy::EndpointResolver& endpoints,
                metrics::ProxyMetrics* metrics);
  ~PolicyFencing() override;

  /// Applies a (re)loaded config: modes, injection, staleness bounds.
  void set_config(std::shared_ptr<const config::Config> config);
  /// Urgent refreshes go here; null: none run (passive mode, never hold).
  void set_refresher(RefreshRequests* r) { refresher_ = r; }

  RequestPlan plan_request(const RequestInput& in) override;
  /// Learns leaders, epochs and upstream node addresses from a Metadata
  /// response passing through (before its addresses are rewritten).
  void learn_metadata(const codec::MetadataResponse& m, int16_t version);

  void learn_response(PolicyResponse m, int16_t version, int32_t node_id) override;
  bool amend_response(InFlightEntry& e, PolicyResponse m, int16_t client_version,
                      int32_t node_id) override;
  bool produce_success_is_news(std::string_view topic, const codec::Uuid& id, int32_t partition,
                               int32_t node_id) override;
  bool leader_of(std::string_view topic, const codec::Uuid& id, int32_t partition,
                 int32_t& leader, int32_t& epoch, bool refresh) override;
  bool hint_leader(std::string_view topic, const codec::Uuid& id, int32_t partition,
                   int32_t leader, codec::ProduceResponse::PartitionProduceResponse& p,
                   std::vector<codec::ProduceResponse::NodeEndpoint>& endpoints) override;

 private:
  struct Settings {
    std::shared_ptr<const config::Config> config;
    std::shared_ptr<const policy::CompiledPolicy> compiled;
  };
  /// The settings one request or response is decided with: plain pointers
  /// into the calling thread's copy (SettingsCache), valid until that thread
  /// reads settings() twice more after a set_config.
  struct SettingsView {
    const config::Config* config;
    const policy::CompiledPolicy* compiled;
  };
  /// The current settings, re-read under the mutex only when set_config ran
  /// since this thread last read them (one atomic load otherwise).
  SettingsView settings() const;
  template <typename Req, typename Resp>
  RequestPlan plan(const RequestInput& in);
  /// Whether `in` may still be held for a refresh (not after a hold, nor
  /// once a refresh finished since it started waiting).
  bool may_hold(const RequestInput& in, const SettingsView& s) const;
  /// Decides a Produce on its fields read in place (codec::ProduceHead)
  /// and, when it goes as it is, does what plan() does for such a request
  /// (refreshes, logs observed fences) and returns true: the plan is then
  /// kForward with nothing attached. False, with nothing done, otherwise
  /// (plan() then decides on the full decode). The caller checked that no
  /// reroute rule is configured.
  bool forward_produce_as_is(const RequestInput& in, const SettingsView& s);
  template <typename Resp>
  bool amend(InFlightEntry& e, Resp& m, int16_t client_version, int32_t node_id);
  /// A broker served partitions the request carried below the view's epoch.
  template <typename Resp>
  void learn_served(const InFlightEntry& e, const Resp& m, int32_t node_id);
  /// The broker's epoch errors for partitions whose epoch epochgate injected
  /// in `e`'s request, answered in `m` as for the client's own -1
  /// (answer_injected_as_sent). Returns the partitions changed.
  template <typename Resp>
  uint32_t answer_injected(const InFlightEntry& e, Resp& m);
  /// Counts and logs the decision's fences; `topic_of(topic_index)` names
  /// a request topic (called only for a fence).
  void count_decision(const policy::RequestDecision& d, const RequestInput& in,
                      const codec::RequestHeader& h,
                      const std::function<std::string(uint32_t)>& topic_of);
  void after_learning(const policy::LearnReport& r);
  /// Asks the refresher for `topics`; `trigger` is a static label.
  /// `confirm`: an epoch-less move report, refreshed at once within the
  /// refresher's per-topic bound (Refresher::request_confirm).
  void refresh(const std::vector<policy::TopicRef>& topics, const char* trigger = "urgent",
               bool confirm = false);

  policy::MetadataView& view_;
  const policy::EndpointResolver& endpoints_;
  metrics::ProxyMetrics* metrics_;
  RefreshRequests* refresher_ = nullptr;
  mutable std::mutex mu_;
  Settings settings_;
  /// Stamp of settings_, unique across instances (0: never set); a thread's
  /// copy is current while its stamp and owner match.
  std::atomic<uint64_t> generation_{0};
  metrics::RateLimitedSite fence_log_{"fence"};
};

}  // namespace epochgate::proxy
