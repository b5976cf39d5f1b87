// proxy/reroute/reroute_poster.cc
#include "proxy/reroute/reroute_poster.h"

#include <algorithm>
#include <vector>

#include "metrics/proxy_metrics.h"
#include "metrics/reroute_metrics.h"
#include "proxy/net/log_limited.h"
#include "proxy/reroute/reroute_send_options.h"

namespace epochgate::proxy {

ReroutePoster::ReroutePoster(WorkerContext& ctx)
    : ctx_(ctx),
      pool_(ctx.loop, ctx.pool, reroute_client_options(*ctx.config), kMaxRerouteLeaders, this) {
  pool_.set_tls(ctx.tls);
}

ReroutePoster::~ReroutePoster() = default;

void ReroutePoster::fell_back(const char* reason, size_t n) {
  if (ctx_.metrics && n > 0) ctx_.metrics->reroute().fell_back(reason, n);
}

void ReroutePoster::on_post_answered() {
  if (ctx_.metrics) ctx_.metrics->reroute().acks0_answered();
  EPOCHGATE_PROXY_LOG(info, "reroute_acks0_answered",
                      "a broker answered an acks=0 Produce epochgate rerouted; the answer was "
                      "dropped (post connections carry nothing else)");
}

bool ReroutePoster::post_all(const std::shared_ptr<ReroutePlan>& shared, const char* refuse,
                             bool enabled) {
  const ReroutePlan& plan = *shared;
  if (plan.targets.empty()) return false;
  if (refuse == nullptr) refuse = plan.refuse;
  if (refuse != nullptr || !enabled) {
    fell_back(refuse ? refuse : "max_in_flight", plan.targets.size());
    return false;
  }
  // A batch whose header does not read goes nowhere: with no answer to
  // carry an error, the client's connection is closed as without rerouting.
  for (const auto& t : plan.targets) {
    if (t.batch_error != nullptr) {
      fell_back("batch_unreadable", plan.targets.size());
      return false;
    }
  }
  std::vector<int32_t> leaders;  // request order
  for (const auto& t : plan.targets)
    if (std::find(leaders.begin(), leaders.end(), t.leader) == leaders.end())
      leaders.push_back(t.leader);
  bool all = true;
  for (int32_t leader : leaders) {
    std::vector<size_t> idx;
    for (size_t i = 0; i < plan.targets.size(); ++i)
      if (plan.targets[i].leader == leader) idx.push_back(i);
    KafkaClient* c = nullptr;
    if (ctx_.upstreams != nullptr)
      if (std::optional<config::HostPort> a = ctx_.upstreams->upstream_of(leader))
        c = pool_.client(leader, *a);
    size_t n = idx.size();
    auto written = [this, n, leader](ClientError e) {
      if (e == ClientError::kNone) {
        if (ctx_.metrics) ctx_.metrics->reroute().delivered(n);
        return;
      }
      EPOCHGATE_PROXY_LOG(info, "reroute_acks0_failed",
                          "acks=0 reroute of {} Produce partition(s) to node {} was not written "
                          "({}); the records are lost as without rerouting",
                          n, leader, client_error_name(e));
      fell_back(e == ClientError::kUnsupportedVersion ? "unsupported_version" : "upstream_failed",
                n);
    };
    ClientError e = c ? c->post(plan.request_for(idx), reroute_send_options(plan), shared,
                                std::move(written))
                      : ClientError::kClosed;
    if (e != ClientError::kNone) {
      all = false;
      fell_back(e == ClientError::kUnsupportedVersion ? "unsupported_version" : "upstream_failed",
                n);
    }
  }
  return all;
}

}  // namespace epochgate::proxy
