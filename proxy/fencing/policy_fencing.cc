// proxy/fencing/policy_fencing.cc: FencingHooks over policy/. Which API goes where
// comes from the generated API table and traits (codec/messages/api_traits.h);
// nothing here names an API but Produce, the one that reroutes.
// Each decided request decodes under limits.max_partitions_per_request and
// counts against the buffer budget for as long as it lives.
#include "proxy/fencing/policy_fencing.h"

#include <spdlog/spdlog.h>
#include <uv.h>

#include <type_traits>
#include <variant>

#include "codec/header.h"
#include "codec/message_io.h"
#include "codec/messages/all.h"
#include "metrics/proxy_metrics.h"
#include "metrics/reroute_metrics.h"
#include "policy/answer.h"
#include "policy/decide.h"
#include "policy/hint_builder.h"
#include "policy/reroute_target.h"
#include "proxy/core/reroute_plan.h"
#include "proxy/core/served_probe.h"
#include "proxy/fencing/decision_lease.h"
#include "proxy/fencing/produce_head_lease.h"
#include "proxy/net/buffer_budget.h"
#include "proxy/net/clock.h"
#include "proxy/net/connection.h"

namespace epochgate::proxy {

namespace {

// A split request's local half, kept until the broker answers the rest.
template <typename Req, typename Resp>
struct SplitContext : EntryContext {
  Req request;  // record bytes dropped: the client's buffer is gone by then
  BudgetCharge charge;  // the decoded request's memory, held as long as it is
  int16_t version = 0;
  policy::RequestDecision decision;
  Resp local;
};

template <typename Resp>
size_t endpoint_count(Resp& m) {
  auto* eps = codec::PartitionShape<Resp>::node_endpoints(m);
  return eps ? eps->size() : 0;
}

template <typename Req>
void drop_record_views(Req& req) {
  using Q = codec::PartitionShape<Req>;
  for (auto& t : Q::topics(req))
    for (auto& p : Q::partitions(t)) Q::drop_views(p);
}

}  // namespace

PolicyFencing::PolicyFencing(policy::MetadataView& view, const policy::EndpointResolver& endpoints,
                             metrics::ProxyMetrics* metrics)
    : view_(view), endpoints_(endpoints), metrics_(metrics) {}

PolicyFencing::~PolicyFencing() = default;

void PolicyFencing::set_config(std::shared_ptr<const config::Config> config) {
  auto compiled = std::make_shared<const policy::CompiledPolicy>(
      policy::CompiledPolicy::compile(config->policy));
  view_.set_rollback_confirmations(config->policy.epoch_rollback_confirmations);
  // Unique across instances, so a thread's copy from an instance that has
  // gone cannot pass for one of a new instance at the same address.
  static std::atomic<uint64_t> next_generation{0};
  std::lock_guard<std::mutex> lock(mu_);
  settings_.config = std::move(config);
  settings_.compiled = std::move(compiled);
  generation_.store(next_generation.fetch_add(1) + 1, std::memory_order_release);
}

PolicyFencing::SettingsView PolicyFencing::settings() const {
  // Each worker keeps its own copy of the shared pointers: reading them is
  // then neither a lock nor a reference count touched by every worker on
  // every request. The copy before the last is kept too, so a caller still
  // holding a view across one refresh (none does today) reads live objects.
  struct SettingsCache {
    const PolicyFencing* owner = nullptr;
    uint64_t generation = 0;
    Settings current;
    Settings previous;
  };
  thread_local SettingsCache cache;
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (cache.owner != this || cache.generation != generation) {
    std::lock_guard<std::mutex> lock(mu_);
    cache.previous = std::move(cache.current);
    cache.current = settings_;
    cache.generation = generation_.load(std::memory_order_relaxed);
    cache.owner = this;
  }
  return {cache.current.config.get(), cache.current.compiled.get()};
}

void PolicyFencing::refresh(const std::vector<policy::TopicRef>& topics, const char* trigger,
                            bool confirm) {
  if (refresher_ == nullptr || topics.empty()) return;
  std::vector<std::string> names;
  auto snap = view_.snapshot();
  for (const auto& t : topics) {
    if (!t.name.empty()) {
      names.push_back(t.name);
    } else if (std::string_view name = snap->topic_name(t.id); !name.empty()) {
      names.emplace_back(name);  // a forgotten topic too: learnt again by name
    }
  }
  // Empty names (an id the view never saw): refresh what the view knows.
  if (confirm && !names.empty()) refresher_->request_confirm(std::move(names), trigger);
  else refresher_->request_urgent(std::move(names), trigger);
}

void PolicyFencing::after_learning(const policy::LearnReport& r) {
  if (metrics_ && r.published) {
    metrics_->set_view_partitions(static_cast<int64_t>(view_.partition_count()));
    metrics_->view_epochs_disputed(r.epochs_disputed);
    metrics_->view_epochs_rolled_back(r.epochs_rolled_back);
  }
  // An old client's epoch-less or id-less Metadata: the refresher learns
  // the epochs and topic ids at its own version; epoch-less entries fence
  // nothing meanwhile (stale writes pass), so those are confirmed at once.
  refresh(r.urgent_refresh,
          r.learned_without_epoch > 0      ? "no_epoch"
          : r.learned_without_topic_id > 0 ? "no_topic_id"
                                           : "urgent",
          r.learned_without_epoch > 0);
}

void PolicyFencing::count_decision(const policy::RequestDecision& d, const RequestInput& in,
                                   const codec::RequestHeader& h,
                                   const std::function<std::string(uint32_t)>& topic_of) {
  // Who and what a fence affects, so observe mode shows what enforce would
  // change: the client's address and id, and the topic.
  std::string client;
  for (const auto& p : d.partitions) {
    if (p.verdict == policy::Verdict::kFence) {
      const char* mode = config::mode_name(p.mode);
      if (metrics_) metrics_->fenced_partition(d.api_key, policy::reason_name(p.reason), mode);
      const codec::ApiInfo* info = codec::api_info(d.api_key);
      if (client.empty()) client = in.client ? in.client->peer() : std::string("?");
      std::string topic = topic_of(p.topic_index);
      fence_log_.log(*metrics::logger("policy"), spdlog::level::info,
                     p.mode == config::Mode::kEnforce ? "fenced" : "would fence (observe)",
                     {{"api", info ? info->name : "?"},
                      {"client", client},
                      {"client_id", h.client_id ? std::string(*h.client_id) : std::string("-")},
                      {"node", in.node_id},
                      {"topic", topic.empty() ? std::string("?") : topic},
                      {"partition", p.partition},
                      {"reason", policy::reason_name(p.reason)},
                      {"error_code", p.error_code},
                      {"request_epoch", p.request_epoch},
                      {"view_epoch", p.view_epoch},
                      {"hint_leader", p.hint_leader},
                      {"hint_epoch", p.hint_epoch}});
    }
  }
  if (metrics_ && d.injected > 0) metrics_->epoch_injected(d.injected);
}

bool PolicyFencing::may_hold(const RequestInput& in, const SettingsView& s) const {
  // A held request is decided for good once a refresh finished after it
  // started waiting (the view is as current as it gets), or at the timeout.
  bool refreshed = in.hold_started_ms != 0 && refresher_ != nullptr &&
                   refresher_->last_completed_ms() > in.hold_started_ms;
  return !in.after_hold && !refreshed && refresher_ != nullptr && s.config->refresher.enabled;
}

bool PolicyFencing::forward_produce_as_is(const RequestInput& in, const SettingsView& s) {
  const codec::RequestHeader& h = in.frame->header;
  const int16_t version = h.api_version;
  ProduceHeadLease lease_head;
  codec::ProduceHead& head = lease_head.get();
  codec::DecodeBounds bounds;
  bounds.max_entries = s.config->limits.max_partitions_per_request;
  if (!head.read(in.frame->body(), in.frame->body_size(), version, bounds).ok()) return false;
  BudgetCharge charge(in.budget, bounds.decoded_bytes);
  auto snap = view_.snapshot();
  const uint64_t decided_ms = in.now_ns != 0 ? in.now_ns / 1000000 : now_ms();
  policy::DecideContext ctx{*snap, *s.compiled, in.node_id, decided_ms, may_hold(in, s)};
  DecisionLease lease;
  policy::RequestDecision& d = lease.get();
  policy::decide(head, version, ctx, d);
  if (d.action != policy::Action::kForwardAsIs) return false;
  // What plan() does for a request it forwards as it is: refreshes, fences
  // observed (logged and counted), and no probe (a Produce carries no epoch
  // to be served below the view's).
  static_assert(!codec::PartitionShape<codec::ProduceRequest>::kHasEpoch);
  refresh(d.urgent_refresh);
  if (d.fenced + d.observed_fences + d.injected > 0) {
    count_decision(d, in, h, [&](uint32_t ti) -> std::string {
      if (ti >= head.topics.size()) return {};
      const codec::ProduceHead::Topic& t = head.topics[ti];
      if (!codec::PartitionShape<codec::ProduceHead>::by_id(version)) return std::string(t.name);
      return std::string(snap->topic_name(t.topic_id));
    });
  }
  return true;
}

template <typename Req, typename Resp>
FencingHooks::RequestPlan PolicyFencing::plan(const RequestInput& in) {
  RequestPlan plan;
  // The header the session parsed when the frame arrived.
  const codec::RequestHeader& h = in.frame->header;
  const int16_t version = h.api_version;
  const SettingsView s = settings();
  // Most Produce requests are forwarded as they are: decided on their
  // fields read in place, they need no decoded request. Anything else (a
  // fence, a hold, a body that does not read, a reroute rule, which plans
  // on the decoded request) is decided again below on the full decode.
  if constexpr (std::is_same_v<Req, codec::ProduceRequest>)
    if (!s.compiled->modes.has_reroute_rules() && forward_produce_as_is(in, s)) return plan;
  Req req;
  codec::Bytes trailing;  // ignored as a broker ignores it; dropped if re-encoded
  // Entries are capped while decoding, before their arrays are allocated: a
  // frame of 3-byte topic entries would otherwise build 32 times its size,
  // and deciding on them would hold every connection of this worker.
  codec::DecodeBounds bounds;
  bounds.max_entries = s.config->limits.max_partitions_per_request;
  codec::Status st = codec::decode_body_allow_trailing(in.frame->body(), in.frame->body_size(),
                                                       version, req, trailing, bounds);
  BudgetCharge charge(in.budget, bounds.decoded_bytes);
  // A head decided early goes only as it is; anything else, even a reroute
  // rule that would only observe, waits for its whole frame.
  if (in.head_only && (!st.ok() || s.compiled->modes.has_reroute_rules())) {
    plan.whole_frame = true;
    return plan;
  }
  if (!st.ok()) {
    plan.action = RequestPlan::Action::kClose;
    plan.malformed = true;
    plan.reason = std::string(Req::kName) + " v" + std::to_string(version) + ": " +
                  st.message();
    if (st.code == codec::Errc::kTooManyPartitions) {
      // As a broker refuses a request it will not process: close this one
      // connection; the limit's name tells the operator what to raise.
      plan.close_reason = metrics::close_reason(st.code);
      plan.reason += ": more than limits.max_partitions_per_request (" +
                     std::to_string(bounds.max_entries) + ") topic and partition entries";
    }
    return plan;
  }
  auto snap = view_.snapshot();
  bool hold_ok = may_hold(in, s);
  // A write epochgate reroutes needs no refresh first: the leader's answer
  // checks the view (a producer that is never told of the move would
  // otherwise wait for a refresh on every write once the entry is old).
  if constexpr (std::is_same_v<Req, codec::ProduceRequest>)
    if (hold_ok && policy::all_topics_reroute(req, version, s.compiled->modes, *snap))
      hold_ok = false;
  const uint64_t decided_ms = in.now_ns != 0 ? in.now_ns / 1000000 : now_ms();
  policy::DecideContext ctx{*snap, *s.compiled, in.node_id, decided_ms, hold_ok};
  DecisionLease lease;
  policy::RequestDecision& d = lease.get();
  policy::decide(req, version, ctx, d);
  if (in.head_only && d.action != policy::Action::kForwardAsIs) {
    plan.whole_frame = true;
    return plan;
  }
  refresh(d.urgent_refresh);
  if constexpr (std::is_same_v<Req, codec::ProduceRequest>) {
    if (s.compiled->modes.has_reroute_rules() && d.action != policy::Action::kHold) {
      plan.reroute = make_reroute_plan(req, version, h, d, s.compiled->modes, *snap,
                                       in.node_id, in.budget);
      if (plan.reroute && plan.reroute->observed > 0 && metrics_)
        metrics_->reroute().observed(plan.reroute->observed);
    }
  }
  count_decision(d, in, h, [&](uint32_t ti) -> std::string {
    using Q = codec::PartitionShape<Req>;
    const auto& topics = Q::topics(req);
    if (ti >= topics.size()) return {};
    if (!Q::by_id(version)) return std::string(Q::name(topics[ti]));
    return std::string(snap->topic_name(Q::id(topics[ti])));
  });

  auto encode_local = [&](const Resp& local) {
    codec::ResponseHeader rh;
    rh.correlation_id = in.frame->correlation_id();
    codec::encode_frame(plan.frame, rh, local, version);
  };
  // Partitions forwarded below the view's epoch: the broker's answer says
  // whether the view's epoch is still the cluster's.
  auto probe = [&] { plan.context = make_served_probe(req, version, d); };
  switch (d.action) {
    case policy::Action::kForwardAsIs:
      probe();
      return plan;
    case policy::Action::kHold:
      plan.action = RequestPlan::Action::kHold;
      return plan;
    case policy::Action::kCloseConnection: {
      plan.reason = "acks=0 Produce to a broker that is no longer the leader";
      if (d.fenced >= d.partitions.size()) {
        plan.action = RequestPlan::Action::kClose;
        return plan;
      }
      // A broker appends the partitions it leads and then closes the
      // connection for the rest (no response either way): forward those.
      Req rewritten = policy::rewrite_request(req, version, d);
      codec::encode_frame(plan.frame, h, rewritten, version);
      plan.reason += " for " + std::to_string(d.fenced) + " of " +
                     std::to_string(d.partitions.size()) + " partitions; the others forwarded";
      plan.action = RequestPlan::Action::kForwardThenClose;
      return plan;
    }
    case policy::Action::kAnswerLocally: {
      policy::AnswerStats stats;
      Resp local = policy::build_local_response(req, version, d, *snap, endpoints_, &stats);
      encode_local(local);
      // Its reroutes' answers merge into it later (RerouteState::response).
      if constexpr (std::is_same_v<Req, codec::ProduceRequest>)
        if (plan.reroute) plan.reroute->local_answer = std::move(local);
      if (metrics_)
        for (uint32_t i = 0; i < stats.hints; ++i) metrics_->hint("synthesized");
      plan.action = RequestPlan::Action::kAnswerLocally;
      return plan;
    }
    case policy::Action::kForwardRewritten: {
      Req rewritten = policy::rewrite_request(req, version, d);
      codec::encode_frame(plan.frame, h, rewritten, version);
      plan.action = RequestPlan::Action::kForwardRewritten;
      probe();
      return plan;
    }
    case policy::Action::kSplit: {
      policy::AnswerStats stats;
      auto split = std::make_unique<SplitContext<Req, Resp>>();
      split->local = policy::build_local_response(req, version, d, *snap, endpoints_, &stats);
      if (metrics_)
        for (uint32_t i = 0; i < stats.hints; ++i) metrics_->hint("synthesized");
      Req rewritten = policy::rewrite_request(req, version, d);
      codec::encode_frame(plan.frame, h, rewritten, version);
      split->version = version;
      split->decision = std::move(d);
      split->request = std::move(req);
      split->charge = std::move(charge);
      drop_record_views(split->request);
      plan.context = std::move(split);
      plan.local_part = true;
      plan.action = RequestPlan::Action::kForwardRewritten;
      return plan;
    }
  }
  return plan;
}

FencingHooks::RequestPlan PolicyFencing::plan_request(const RequestInput& in) {
  return codec::with_api(in.frame->api_key(), RequestPlan{}, [&](auto api) {
    using A = decltype(api);
    if constexpr (A::kDecided)
      return plan<typename A::Request, typename A::Response>(in);
    else
      return RequestPlan{};
  });
}

namespace {

// The view's entry of a partition named by topic name (or, without one, id).
const policy::PartitionEntry* find_partition(const policy::MetadataSnapshot& snap,
                                             std::string_view topic, const codec::Uuid& id,
                                             int32_t partition) {
  const policy::TopicEntry* t = !topic.empty() ? snap.find_topic(topic) : snap.find_topic(id);
  return t ? t->partition(partition) : nullptr;
}

}  // namespace

bool PolicyFencing::leader_of(std::string_view topic, const codec::Uuid& id, int32_t partition,
                              int32_t& leader, int32_t& epoch, bool refresh_topic) {
  auto snap = view_.snapshot();
  const policy::PartitionEntry* p = find_partition(*snap, topic, id, partition);
  if (refresh_topic) refresh({policy::TopicRef{std::string(topic), id}}, "urgent");
  if (p == nullptr || p->leader_id < 0 || p->leader_epoch < 0) return false;
  leader = p->leader_id;
  epoch = p->leader_epoch;
  return true;
}

bool PolicyFencing::hint_leader(std::string_view topic, const codec::Uuid& id, int32_t partition,
                                int32_t leader, codec::ProduceResponse::PartitionProduceResponse& p,
                                std::vector<codec::ProduceResponse::NodeEndpoint>& endpoints) {
  auto snap = view_.snapshot();
  const policy::PartitionEntry* e = find_partition(*snap, topic, id, partition);
  if (e == nullptr || e->leader_id != leader || e->leader_epoch < 0) return false;
  policy::HintBuilder<codec::ProduceResponse> hints(*snap, endpoints_);
  hints.seed(endpoints);
  const bool hinted = hints.hint(p, leader, e->leader_epoch);
  hints.finish(endpoints);
  return hinted;
}

bool PolicyFencing::produce_success_is_news(std::string_view topic, const codec::Uuid& id,
                                            int32_t partition, int32_t node_id) {
  return policy::MetadataView::success_is_news(*view_.snapshot(), topic, id, partition, node_id);
}

void PolicyFencing::learn_metadata(const codec::MetadataResponse& m, int16_t version) {
  after_learning(view_.learn_metadata(m, version, now_ms(), policy::Source::kMetadataResponse));
}

void PolicyFencing::learn_response(PolicyResponse m, int16_t version, int32_t node_id) {
  std::visit(
      [&](auto* r) {
        using Resp = std::remove_pointer_t<decltype(r)>;
        if constexpr (std::is_same_v<Resp, codec::MetadataResponse>)
          learn_metadata(*r, version);
        else if constexpr (codec::Api<Resp::kApiKey>::kLearned)
          after_learning(view_.learn_from(*r, version, node_id, now_ms()));
      },
      m);
}

template <typename Resp>
uint32_t PolicyFencing::answer_injected(const InFlightEntry& e, Resp& m) {
  using Req = policy::RequestOf<Resp>;
  const auto* probe = dynamic_cast<const ServedProbe*>(e.context.get());
  std::unique_ptr<ServedProbe> of_split;
  if (probe == nullptr) {
    // A split request keeps its decision: the injected partitions of its
    // forwarded half are named there.
    const auto* split = dynamic_cast<const SplitContext<Req, Resp>*>(e.context.get());
    if (split == nullptr) return 0;
    of_split = make_served_probe(split->request, split->version, split->decision);
    probe = of_split.get();
  }
  if (probe == nullptr) return 0;
  const uint32_t n = answer_injected_as_sent(*probe, m, e.upstream_version);
  if (n > 0 && metrics_) metrics_->injected_epoch_answered(n);
  return n;
}

template <typename Resp>
void PolicyFencing::learn_served(const InFlightEntry& e, const Resp& m, int32_t node_id) {
  const auto* probe = dynamic_cast<const ServedProbe*>(e.context.get());
  if (probe == nullptr) return;
  auto served = served_by(*probe, m, e.upstream_version);
  if (served.empty()) return;
  // Disputes and rollbacks it causes are counted by after_learning (the
  // view's dispute and rollback counters), like those of lower Metadata.
  after_learning(view_.learn_served(served, node_id, now_ms()));
}

template <typename Resp>
bool PolicyFencing::amend(InFlightEntry& e, Resp& m, int16_t client_version, int32_t node_id) {
  using Req = policy::RequestOf<Resp>;
  bool touched = false;
  learn_served(e, m, node_id);
  auto* split = dynamic_cast<SplitContext<Req, Resp>*>(e.context.get());
  if (split != nullptr) {
    m = policy::merge_responses(split->request, split->version, split->decision, std::move(m),
                                std::move(split->local));
    touched = true;
  }
  // Before the backfill, so the answer the client gets carries the hint its
  // own NOT_LEADER_OR_FOLLOWER would have.
  if (answer_injected(e, m) > 0) touched = true;
  if constexpr (codec::kCarriesHints<Resp>) {
    if (!policy::version_carries_hints(Resp::kApiKey, client_version)) return touched;
    const SettingsView s = settings();
    auto snap = view_.snapshot();
    policy::BackfillContext bc{*snap, endpoints_, node_id, now_ms(),
                               s.config->policy.max_staleness_ms, &s.compiled->modes};
    size_t endpoints_before = endpoint_count(m);
    uint32_t added =
        policy::backfill_hints(m, client_version, split ? &split->request : nullptr, bc);
    if (endpoint_count(m) != endpoints_before) touched = true;  // completed a broker's hint
    if (added > 0) {
      touched = true;
      if (metrics_)
        for (uint32_t i = 0; i < added; ++i) metrics_->hint("backfilled");
    }
  }
  return touched;
}

bool PolicyFencing::amend_response(InFlightEntry& e, PolicyResponse m, int16_t client_version,
                                   int32_t node_id) {
  return std::visit(
      [&](auto* r) {
        using Resp = std::remove_pointer_t<decltype(r)>;
        if constexpr (codec::Api<Resp::kApiKey>::kDecided)
          return amend(e, *r, client_version, node_id);
        else
          return false;
      },
      m);
}

}  // namespace epochgate::proxy
