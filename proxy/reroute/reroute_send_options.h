// proxy/reroute/reroute_send_options.h: how a rerouted Produce is sent: the
// internal clients' options (pool bound, timeouts, identity) and each send's
// SendOptions (its version range, timeout and client id), shared by the
// acks>=1 sends (proxy/reroute/rerouter.h) and the acks=0 posts
// (proxy/reroute/reroute_poster.h). Pure; sends nothing.
#pragma once

#include <algorithm>
#include <cstdint>

#include "config/config.h"
#include "proxy/client/kafka_client.h"
#include "proxy/core/reroute_plan.h"

namespace epochgate::proxy {

/// Internal clients of one worker for rerouting: one per leader node; more
/// nodes than this fall back (upstream_failed) rather than grow without bound.
inline constexpr size_t kMaxRerouteLeaders = 256;

/// Options of the internal clients that carry rerouted Produce requests
/// (acks>=1 sends and acks=0 posts alike): `c`'s upstream connect timeout
/// (ms), the refresher's request timeout as the login bound (ms), at least
/// 64 outstanding requests per leader. Sidecar credential mode: every client
/// session logs in as epochgate, so epochgate's own login is the client's
/// principal; otherwise the client did not authenticate (the request path
/// refuses any that did), so the internal client logs in as nobody either.
inline KafkaClientOptions reroute_client_options(const config::Config& c) {
  KafkaClientOptions o;
  o.connect_timeout_ms = c.limits.upstream_connect_timeout_ms;
  o.login_timeout_ms = c.refresher.request_timeout_ms;
  if (c.upstream_sasl.on_behalf_of_clients) o.sasl = c.upstream_sasl;
  o.max_outstanding = std::max<size_t>(64, c.reroute.max_in_flight);
  return o;
}

/// Options for sending `plan`'s partitions to their leader: at most the
/// client's version (the answer merges into it), from v3 (RecordBatch v2,
/// KIP-98) so a Produce <= v9 leader behind the KIP-951 bridge can take it;
/// the client's client id (brokers account quotas by user and client id);
/// a bound of the request's timeout_ms plus 1 s, clamped to 1..60 s, on
/// the whole wait from the reroute decision: connecting to the leader (a
/// cold pool dials first) and logging in count against it, so the client's
/// response, and those behind it on its connection, wait at most that.
inline SendOptions reroute_send_options(const ReroutePlan& plan) {
  SendOptions o;
  o.timeout_ms =
      static_cast<uint32_t>(std::clamp<int64_t>(int64_t{plan.timeout_ms} + 1000, 1000, 60000));
  o.deadline_ms = o.timeout_ms;
  o.min_version = std::min<int16_t>(plan.version, 3);
  o.max_version = plan.version;
  o.client_id = plan.client_id;
  return o;
}

}  // namespace epochgate::proxy
