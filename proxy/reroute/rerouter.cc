// proxy/reroute/rerouter.cc
#include "proxy/reroute/rerouter.h"

#include <spdlog/spdlog.h>
#include <uv.h>

#include <algorithm>
#include <string>

#include "codec/header.h"
#include "codec/message_io.h"
#include "metrics/proxy_metrics.h"
#include "metrics/reroute_metrics.h"
#include "policy/decision.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/in_flight_request.h"
#include "proxy/fencing/address_rewriter.h"
#include "proxy/net/clock.h"
#include "proxy/net/log_limited.h"
#include "proxy/reroute/reroute_send_options.h"
#include "codec/kafka_errors.h"

namespace epochgate::proxy {

Rerouter::Rerouter(WorkerContext& ctx, BrokerClients* clients)
    : ctx_(ctx),
      own_clients_(clients ? std::unique_ptr<KafkaClientPool>()
                           : std::make_unique<KafkaClientPool>(ctx.loop, ctx.pool,
                                                               reroute_client_options(*ctx.config),
                                                               kMaxRerouteLeaders)),
      clients_(clients ? *clients : *own_clients_),
      guard_(ctx.config->reroute.max_in_flight),
      poster_(ctx) {
  if (own_clients_) own_clients_->set_tls(ctx.tls);
  uv_timer_init(ctx.loop, &wait_timer_);
  wait_timer_.data = this;
}

Rerouter::~Rerouter() = default;

bool Rerouter::enabled() const { return ctx_.config->reroute.max_in_flight > 0; }

void Rerouter::close(std::function<void()> done) {
  if (!closed_) {
    closed_ = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&wait_timer_), nullptr);
    close_gaps();
  }
  clients_.close([this, done = std::move(done)]() mutable { poster_.close(std::move(done)); });
}

void Rerouter::fell_back(const char* reason, size_t n) {
  if (ctx_.metrics && n > 0) ctx_.metrics->reroute().fell_back(reason, n);
}

void Rerouter::report() {
  if (!ctx_.metrics) return;
  ctx_.metrics->reroute().set_in_flight(static_cast<double>(guard_.in_flight()));
  ctx_.metrics->reroute().set_held_now(static_cast<double>(guard_.held()));
}

BrokerClient* Rerouter::client_for(int32_t leader) {
  if (ctx_.upstreams == nullptr) return nullptr;
  std::optional<config::HostPort> address = ctx_.upstreams->upstream_of(leader);
  if (!address) return nullptr;
  return clients_.client(leader, *address);
}

bool Rerouter::post_all(const std::shared_ptr<ReroutePlan>& plan, const char* refuse) {
  return poster_.post_all(plan, refuse, enabled());
}

void Rerouter::direct_answered(RerouteState& st) {
  for (const policy::StreamKey& k : st.direct) guard_.direct_answered(st.ticket, k);
  if (!st.direct.empty()) wake_order_waiters();
  st.direct.clear();
}

void Rerouter::direct_answered_except(RerouteState& st, const std::vector<size_t>& waiting) {
  std::vector<policy::StreamKey> keep;
  for (const policy::StreamKey& k : st.direct) {
    bool waits = false;
    for (size_t i : waiting) waits = waits || st.plan->streams[i].key == k;
    if (waits) keep.push_back(k);
    else guard_.direct_answered(st.ticket, k);
  }
  st.direct = std::move(keep);
  wake_order_waiters();
}

void Rerouter::start(InFlightRequest& e, std::shared_ptr<ReroutePlan> plan,
                     const std::shared_ptr<RerouteSink>& sink, policy::Ticket ticket,
                     const char* refuse) {
  guard_.set_max_in_flight(ctx_.config->reroute.max_in_flight);
  auto st = std::make_shared<RerouteState>();
  st->plan = std::move(plan);
  st->answers.resize(st->plan->targets.size());
  st->ticket = ticket;
  st->started_ns = now_ns();
  st->entry = &e;
  st->sink = sink;
  st->owner = this;
  if (refuse == nullptr) refuse = st->plan->refuse;
  st->refuse = refuse;
  // Every partition answered locally: that answer, decoded, is what the
  // leaders' answers merge into (e.response holds its encoding).
  if (st->plan->local_answer) {
    st->response = std::move(st->plan->local_answer);
    st->plan->local_answer.reset();
    st->response_header.correlation_id = e.correlation_id;
    st->response_header.header_version = codec::response_header_version(e.api_key, e.api_version);
  }
  e.reroute = st;
  const ReroutePlan& p = *st->plan;
  // Forwarded partitions: in flight on the client's path until answered.
  // must_wait() was kNone for each (the session parks those that wait).
  for (const RerouteStream& s : p.streams) {
    if (s.target >= 0) continue;
    guard_.forward(ticket, s.key, s.node);
    st->direct.push_back(s.key);
  }
  // Which targets may go, by the identity and order rules; the rest keep
  // their local answer.
  std::vector<char> go(p.targets.size(), 0);
  for (const RerouteStream& s : p.streams) {
    if (s.target < 0) continue;
    const RerouteTargetPart& t = p.targets[s.target];
    if (refuse != nullptr) {
      fell_back(refuse);
      continue;
    }
    if (t.batch_error != nullptr) {
      fell_back("batch_unreadable");
      continue;
    }
    policy::RerouteRefusal r = guard_.begin_reroute(ticket, s.key, t.leader);
    spdlog::debug("reroute: ticket {} reroutes {}/{}[{}] pid {}: {}", ticket, s.key.client,
                  s.key.topic, s.key.partition, s.key.producer_id, policy::reroute_refusal_name(r));
    if (r != policy::RerouteRefusal::kNone) {
      // A write that stopped waiting for an earlier one (no room, too long)
      // is counted by why it stopped.
      bool waited = r == policy::RerouteRefusal::kEarlierInFlight ||
                    r == policy::RerouteRefusal::kEarlierHeld;
      fell_back(waited && p.wait_refusal ? p.wait_refusal : policy::reroute_refusal_name(r));
      continue;
    }
    go[s.target] = 1;
  }
  std::vector<size_t> targets;
  for (size_t i = 0; i < p.targets.size(); ++i)
    if (go[i]) targets.push_back(i);
  send_legs(st, e, targets);
  report();
  wake_order_waiters();
}

void Rerouter::send_legs(const std::shared_ptr<RerouteState>& st, InFlightRequest& e,
                         const std::vector<size_t>& targets, int reuse_part) {
  const ReroutePlan& p = *st->plan;
  size_t first = st->legs.size();
  for (size_t i : targets) {
    int32_t leader = p.targets[i].leader;
    auto it = std::find_if(st->legs.begin() + static_cast<std::ptrdiff_t>(first), st->legs.end(),
                           [leader](const RerouteState::Leg& l) { return l.leader == leader; });
    if (it == st->legs.end()) {
      st->legs.push_back(RerouteState::Leg{leader, {}, -1});
      it = st->legs.end() - 1;
    }
    it->targets.push_back(i);
  }
  for (size_t li = first; li < st->legs.size(); ++li) {
    RerouteState::Leg& leg = st->legs[li];
    BrokerClient* c = client_for(leg.leader);
    int part = reuse_part >= 0 && li == first ? reuse_part
               : c                            ? e.add_part(RequestPart::Source::kReroute)
                                              : -1;
    ClientError err = ClientError::kClosed;
    if (part >= 0 && c) {
      leg.part = part;
      err = c->send(p.request_for(leg.targets), reroute_send_options(p),
                    [this, st, li](ClientResult<codec::ProduceResponse>&& r) {
                      on_answer(st, li, std::move(r));
                    },
                    st->plan);
      spdlog::debug("reroute: {} partition(s) to node {}: {}", leg.targets.size(), leg.leader,
                    client_error_name(err));
    }
    if (err != ClientError::kNone) {
      if (part >= 0) e.answer_part(static_cast<size_t>(part));
      leg.part = -1;
      fell_back(err == ClientError::kUnsupportedVersion ? "unsupported_version" : "upstream_failed",
                leg.targets.size());
      for (size_t t : leg.targets)
        for (const RerouteStream& s : p.streams)
          if (s.target == static_cast<int>(t)) guard_.reroute_answered(st->ticket, s.key);
    }
  }
}

int32_t Rerouter::new_leader(const RerouteState& st, size_t i, bool refresh) {
  const RerouteStream& s = st.plan->streams[i];
  const RerouteTargetPart& sp = st.plan->spare[static_cast<size_t>(s.spare)];
  int32_t leader = -1, epoch = -1;
  if (ctx_.fencing == nullptr ||
      !ctx_.fencing->leader_of(sp.topic, sp.topic_id, sp.partition, leader, epoch, refresh))
    return -1;
  return leader == s.node ? -1 : leader;
}

std::vector<size_t> Rerouter::retarget(RerouteState& st,
                                       const std::vector<std::pair<size_t, int32_t>>& picks) {
  ReroutePlan& p = *st.plan;
  std::vector<size_t> made;
  for (const auto& [i, leader] : picks) {
    RerouteStream& s = p.streams[i];
    const RerouteTargetPart& sp = p.spare[static_cast<size_t>(s.spare)];
    if (sp.batch_error != nullptr) {
      fell_back("batch_unreadable");
      continue;
    }
    // Its own write on the client's path ends here, in the same step, so
    // a later write of the stream already sent is still known to the guard.
    bool later_pending = false;
    policy::RerouteRefusal r =
        guard_.reroute_answered_direct(st.ticket, s.key, leader, &later_pending);
    if (r != policy::RerouteRefusal::kNone) {
      fell_back(policy::reroute_refusal_name(r));
      continue;
    }
    RerouteTargetPart t = sp;
    t.leader = leader;
    // Later writes still at the old broker: no further hop, which could
    // reach that broker after them should it lead again.
    if (later_pending) t.hop = 2;
    int32_t view_leader = -1;
    if (ctx_.fencing == nullptr ||
        !ctx_.fencing->leader_of(sp.topic, sp.topic_id, sp.partition, view_leader, t.leader_epoch,
                                 false) ||
        view_leader != leader)
      t.leader_epoch = -1;
    s.target = static_cast<int>(p.targets.size());
    p.targets.push_back(std::move(t));
    st.answers.resize(p.targets.size());
    made.push_back(static_cast<size_t>(s.target));
  }
  return made;
}

void Rerouter::after_broker_answer(InFlightRequest& e) {
  const std::shared_ptr<RerouteState>& st = e.reroute;
  ReroutePlan& p = *st->plan;
  // The response pipeline left the broker's answer decoded in st->response.
  if (p.spare.empty() || !enabled() || !st->response) {
    direct_answered(*st);
    return;
  }
  const codec::ProduceResponse& m = *st->response;
  std::vector<std::pair<size_t, int32_t>> picks;
  for (const auto& topic : m.responses) {
    for (const auto& part : topic.partition_responses) {
      if (part.error_code != codec::kErrNotLeaderOrFollower) continue;
      for (size_t i = 0; i < p.streams.size(); ++i) {
        const RerouteStream& s = p.streams[i];
        if (s.target >= 0 || s.spare < 0) continue;
        const RerouteTargetPart& sp = p.spare[static_cast<size_t>(s.spare)];
        if (sp.partition != part.index || sp.topic != topic.name || sp.topic_id != topic.topic_id)
          continue;
        // The identity rule holds for this moment too: the answer goes
        // back to the client as it came.
        if (st->refuse != nullptr) {
          fell_back(st->refuse);
          break;
        }
        // The old leader appended this write before it lost leadership (its
        // refusal carries the offset the write was given, as Kafka's
        // delayed acks=all answer does when the election cuts its wait), so
        // the write may survive on the new leader. An idempotent producer's
        // sequence makes a resend harmless (the leader answers it as a
        // duplicate); another producer's resend could store it twice where
        // a client that does not retry would only have seen the error.
        if (part.base_offset >= 0 && s.key.producer_id < 0) {
          fell_back("maybe_stored");
          break;
        }
        int32_t leader = new_leader(*st, i, false);
        // Behind writes still waiting for their leader, a known one waits
        // too: check_waiting sends them all in the order they came back.
        if (leader >= 0 && waiting_.empty()) picks.emplace_back(i, leader);
        else st->waiting.push_back(i);
        break;
      }
    }
  }
  // A write waiting for its new leader stays "in flight on the client's
  // path" in the guard, so a later write of its stream cannot be rerouted
  // past it while it waits; every other answered write ends here.
  std::vector<size_t> keep = st->waiting;
  for (const auto& pick : picks) keep.push_back(pick.first);
  direct_answered_except(*st, keep);
  st->started_ns = now_ns();
  if (!picks.empty()) send_legs(st, e, retarget(*st, picks));
  if (!st->waiting.empty()) {
    uint32_t wait_ms = ctx_.config->reroute.max_wait_ms;
    int part = wait_ms > 0 ? e.add_part(RequestPart::Source::kReroute) : -1;
    if (part < 0) {
      fell_back("no_leader", st->waiting.size());
      st->waiting.clear();
      direct_answered(*st);
    } else {
      // The leader is unknown: refresh now, and keep the answer back (its
      // FIFO slot unready, later responses behind it) for at most max_wait_ms.
      bool known = false;
      for (size_t i : st->waiting)
        if (new_leader(*st, i, false) >= 0) known = true;
        else new_leader(*st, i, true);
      st->wait_part = part;
      st->wait_until_ns = now_ns() + uint64_t{wait_ms} * 1000000;
      waiting_.push_back(st);
      if (known) uv_timer_start(&wait_timer_, &Rerouter::on_wait_timer, 0, 2);
      else if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&wait_timer_)))
        uv_timer_start(&wait_timer_, &Rerouter::on_wait_timer, 2, 2);
    }
  }
  report();
}

void Rerouter::tell_new_leader(RerouteState& st, int32_t leader, const RerouteTargetPart& tp,
                               codec::ProduceResponse::PartitionProduceResponse& part) {
  // Produce v10 carries CurrentLeader on any partition answer (KIP-951);
  // librdkafka applies it whatever the error code, so a delivered write
  // also moves the client to the new leader's listener, where its next
  // writes go directly (held by the guard behind what is still rerouted).
  // Clients that read hints only on errors learn at their next Metadata.
  if (st.plan->version < 10 || ctx_.fencing == nullptr) return;
  ctx_.fencing->hint_leader(tp.topic, tp.topic_id, tp.partition, leader, part, st.endpoints);
}

void Rerouter::on_answer(const std::shared_ptr<RerouteState>& st, size_t li,
                         ClientResult<codec::ProduceResponse>&& r) {
  RerouteState::Leg& leg = st->legs[li];
  const ReroutePlan& p = *st->plan;
  std::vector<size_t> rehops;  // NOT_LEADER_OR_FOLLOWER from a first hop's leader
  std::vector<size_t> held;    // in a sequence gap (rerouter_gap.cc)
  spdlog::debug("reroute: node {} answered {} partition(s): {}", leg.leader, leg.targets.size(),
                client_error_name(r.error));
  if (!r.ok()) {
    EPOCHGATE_PROXY_LOG(info, "reroute_failed",
                        "reroute of {} Produce partition(s) to node {} failed ({}: {}); the client "
                        "gets NOT_LEADER_OR_FOLLOWER and retries",
                        leg.targets.size(), leg.leader, client_error_name(r.error), r.detail);
    fell_back(r.error == ClientError::kUnsupportedVersion ? "unsupported_version" : "upstream_failed",
              leg.targets.size());
    for (size_t t : leg.targets) gap_failed(*st, leg.leader, t);
  } else {
    codec::ProduceResponse& m = r.response;
    // Learn first (upstream addresses), then rewrite what the leader sent.
    if (ctx_.fencing) ctx_.fencing->learn_response(&m, r.version, leg.leader);
    RewriteResult rw = rewrite_addresses(m, p.version, *ctx_.endpoints);
    st->throttle_time_ms = std::max(st->throttle_time_ms, m.throttle_time_ms);
    size_t delivered = 0, second = 0;
    for (auto& topic : m.responses) {
      for (auto& part : topic.partition_responses) {
        for (size_t t : leg.targets) {
          const RerouteTargetPart& tp = p.targets[t];
          if (tp.partition != part.index || tp.topic != topic.name || tp.topic_id != topic.topic_id)
            continue;
          if (gap_hold(st, leg.leader, leg.part, t, part)) {
            held.push_back(t);
            break;
          }
          if (part.error_code == codec::kErrNotLeaderOrFollower) {
            // The leader epochgate's view named moved on too: one more hop
            // when the view names a newer one (rerouter_wait.cc); a second
            // hop's refusal goes back to the client as today.
            // Not when a later write of the stream was rerouted to this same
            // leader behind it: the leader may have taken over between the
            // two and stored the later one (its sequence past a gap: an
            // OUT_OF_ORDER_SEQUENCE_NUMBER the client, seeing this write
            // succeed, takes as fatal, librdkafka 2.15.1 on a real move).
            // The refusal goes to the client instead, which resends in order.
            bool overtaken = false;
            for (const RerouteStream& s : p.streams)
              if (s.target == static_cast<int>(t) &&
                  guard_.later_rerouted_to(st->ticket, s.key, leg.leader))
                overtaken = true;
            if (tp.hop < 2 && enabled() && !overtaken) rehops.push_back(t);
            else ++second;
          } else {
            if (part.error_code == 0 && !part.current_leader) tell_new_leader(*st, leg.leader, tp, part);
            st->keep_bytes(part);
            st->answers[t] = std::move(part);
            ++delivered;
          }
          break;
        }
      }
    }
    if (!rw.failed && m.node_endpoints)
      for (auto& n : *m.node_endpoints) {
        st->keep_bytes(n);
        st->endpoints.push_back(std::move(n));
      }
    if (ctx_.metrics) {
      ctx_.metrics->reroute().delivered(delivered);
      if (delivered > 0)
        ctx_.metrics->reroute().added(static_cast<double>(now_ns() - st->started_ns) / 1e9);
    }
    fell_back("second_hop", second);
    size_t missing = leg.targets.size() - delivered - second - rehops.size() - held.size();
    fell_back("upstream_failed", missing);
  }
  for (size_t t : leg.targets) {
    if (std::find(rehops.begin(), rehops.end(), t) != rehops.end()) continue;
    if (std::find(held.begin(), held.end(), t) != held.end()) continue;
    for (const RerouteStream& s : p.streams)
      if (s.target == static_cast<int>(t)) guard_.reroute_answered(st->ticket, s.key);
  }
  // `leg` is not used past here: a rehop or a gap's resend adds legs.
  const int part = leg.part;
  std::shared_ptr<RerouteSink> sink = st->sink.lock();
  const bool alive = sink && sink->alive && part >= 0;
  // A held target keeps the part open until its gap settles (which may
  // hand the part to its resend): decided before any gap settles.
  const bool answer_now = alive && !st->holds(part);
  if (!rehops.empty()) rehop(st, rehops, alive);
  if (answer_now) {
    st->entry->answer_part(static_cast<size_t>(part));
    if (finish_rerouted(*st->entry) && sink->flush) sink->flush();
  }
  check_gaps();
  report();
  wake_order_waiters();
}

}  // namespace epochgate::proxy
