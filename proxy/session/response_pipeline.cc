// proxy/session/response_pipeline.cc: the one pipeline every response that
// epochgate reads goes through, addressed or not (docs/architecture.md
// section 9): decode at the version the broker answered, learn (while
// NodeEndpoints still name upstream brokers), rewrite broker addresses to
// epochgate's, let the policy merge a split request's parts and backfill
// KIP-951 hints, then encode at the client's version only when something
// changed; a Produce with reroutes is kept decoded instead, for the
// leaders' answers to merge into (RerouteState). ApiVersions is capped
// before it (it decides the KIP-951 bridge). A Produce answer none of the
// steps would touch is recognised in place and not decoded.
// Must never let an upstream address reach the client, or re-encode a
// response nothing changed.
#include <string>
#include <type_traits>

#include "codec/api_versions_io.h"
#include "codec/message_io.h"
#include "codec/messages/api_traits.h"
#include "codec/metadata_brokers.h"
#include "codec/fetch_response_peek.h"
#include "codec/produce_response_peek.h"
#include "codec/wire_ints.h"
#include "metrics/proxy_metrics.h"
#include "proxy/core/fencing_hooks.h"
#include "proxy/core/reroute_state.h"
#include "proxy/fencing/address_rewriter.h"
#include "proxy/session/api_versions_filter.h"
#include "proxy/session/response_path.h"

namespace epochgate::proxy {

namespace {

// Encodes `header` + `msg` at `version` as a size-prefixed frame into `out`.
// Bytes a peer sent after the body (brokers ignore them) are kept, so an
// unchanged message re-encodes byte-identical.
template <typename M>
void encode_response_frame(const codec::ResponseHeader& header, const M& msg, int16_t version,
                           std::vector<uint8_t>& out, const codec::Bytes& trailing) {
  out.clear();
  codec::encode_frame(out, header, msg, version);
  if (trailing.size > 0) {
    out.insert(out.end(), trailing.data, trailing.data + trailing.size);
    write_be32(out.data(), static_cast<uint32_t>(out.size() - 4));
  }
}

}  // namespace

bool ResponsePath::transform_response(InFlightRequest& e, const uint8_t* frame, size_t size,
                                      std::vector<uint8_t>& out, BrokerTail& tail, Made& made) {
  const int16_t key = e.api_key;
  if (key == codec::kProduce && e.reroute) {
    // Kept until the leaders answer: decoded from its own copy, so the
    // decoded response's byte views outlive the read buffer.
    e.response.assign(frame - 4, frame + size);
    frame = e.response.data() + 4;
  }
  codec::ResponseHeader h;
  codec::Status st = codec::parse_response_header(
      frame, size, codec::response_header_version(key, e.upstream_version), h);
  if (!st.ok()) {
    host_.frame_error(metrics::close_reason(st.code), "response header from " + upstream_name_);
    return false;
  }
  const uint8_t* body = frame + h.size;
  const size_t body_len = size - h.size;
  // The client gets the header version of the version it asked for.
  h.header_version = codec::response_header_version(key, e.api_version);
  if (key == codec::kApiVersions)
    return cap_api_versions_response(e, h, body, body_len, out, made);
  return codec::with_api(key, true, [&](auto api) {
    using A = decltype(api);
    using M = typename A::Response;
    if constexpr (codec::kCarriesAddresses<M> || A::kDecided || A::kLearned)
      return run_pipeline<M>(e, h, body, body_len, out, tail, made);
    else
      return true;
  });
}

bool ResponsePath::cap_api_versions_response(InFlightRequest& e, const codec::ResponseHeader& h,
                                             const uint8_t* body, size_t body_len,
                                             std::vector<uint8_t>& out, Made& made) {
  codec::ApiVersionsResponse m;
  int16_t used_version = e.upstream_version;
  codec::Status s =
      codec::decode_api_versions_response(body, body_len, e.upstream_version, m, used_version);
  // A broker refusing the version (error 35, body in v0) or a body that
  // decodes in neither version: the client handles it as from the broker.
  if (!s.ok() || m.error_code != 0) return true;
  for (const auto& k : m.api_keys) {
    if (k.api_key == codec::kProduce) broker_max_produce_ = k.max_version;
    if (k.api_key == codec::kFetch) broker_max_fetch_ = k.max_version;
  }
  bool bridge = ctx_.config->policy.kip951_bridge && ctx_.fencing != nullptr;
  if (cap_api_versions(m, bridge) > 0) {
    bridging_.produce = bridge && broker_max_produce_ == 9;
    bridging_.fetch = bridge && broker_max_fetch_ == 15;
    if (ctx_.metrics) ctx_.metrics->api_versions_capped();
    encode_response_frame(h, m, used_version, out, codec::Bytes{});
    made = Made::kChanged;
  }
  return true;
}

template <typename M>
bool ResponsePath::run_pipeline(InFlightRequest& e, codec::ResponseHeader& h, const uint8_t* body,
                                size_t body_len, std::vector<uint8_t>& out, BrokerTail& tail,
                                Made& made) {
  using A = codec::Api<M::kApiKey>;
  constexpr bool kAddressed = codec::kCarriesAddresses<M>;
  FencingHooks* policy = ctx_.fencing;
  // A response only the policy reads passes as it is without the policy.
  if constexpr (!kAddressed)
    if (policy == nullptr) return true;

  // 0. Answers that go out as their bytes, undecoded: only where nothing
  // else rewrites them (no split part or injected epoch in a context, no
  // reroute to merge, the client at the broker's version).
  const bool only_the_broker = !e.context && !e.reroute && e.upstream_version == e.api_version;
  // A Produce answer that is all successes, tags nothing (no hint, no
  // NodeEndpoints) and teaches the view nothing: decoding it would change
  // nothing.
  if constexpr (std::is_same_v<M, codec::ProduceResponse>) {
    if (only_the_broker) {
      bool news = false;
      const bool clean = codec::peek_clean_produce_response(
          body, body_len, e.upstream_version, [&](const codec::CleanProducePartition& p) {
            if (policy && !news)
              news = policy->produce_success_is_news(p.topic, p.topic_id, p.partition, node_id_);
          });
      if (clean && !news) return true;
    }
  }
  // The same for a Fetch answer with no error and nothing tagged: a success
  // teaches the view nothing for an API not served by leaders only (a
  // follower may answer it), no hint or NodeEndpoints need addresses, and
  // hints are backfilled only for errors.
  if constexpr (std::is_same_v<M, codec::FetchResponse>) {
    static_assert(A::kRule != codec::PolicyRule::kLeader,
                  "a clean Fetch answer would teach leaders: it could not pass undecoded");
    if (only_the_broker && codec::fetch_response_is_clean(body, body_len, e.upstream_version))
      return true;
  }
  // 1. Decode, at the version the broker answered.
  M m;
  codec::Bytes trailing;
  codec::Status s =
      codec::decode_body_allow_trailing(body, body_len, e.upstream_version, m, trailing);
  if (!s.ok()) {
    // Addressed responses close with the codec's reason, the ones only the
    // policy reads as malformed_response.
    if constexpr (kAddressed)
      host_.frame_error(metrics::close_reason(s.code),
                        std::string(M::kName) + " from " + upstream_name_ + ": " + s.message());
    else
      host_.frame_error(CloseReason::kMalformedResponse,
                        std::string(M::kName) + ": " + s.message() + " from " + upstream_name_);
    return false;
  }
  // 2. Learn, while NodeEndpoints still name the upstream brokers.
  if constexpr (A::kLearned)
    if (policy) policy->learn_response(&m, e.upstream_version, node_id_);
  // 3. Rewrite what the broker sent to epochgate's addresses.
  bool touched = e.upstream_version != e.api_version;
  if constexpr (kAddressed) {
    RewriteResult r = rewrite_addresses(m, e.api_version, *ctx_.endpoints);
    if (r.failed) {
      host_.frame_error(CloseReason::kEndpointUnmapped,
                        "no listener for a broker node id in a response");
      return false;
    }
    if (r.rewritten > 0 && ctx_.metrics) {
      ctx_.metrics->addresses_rewritten(e.api_key, r.rewritten);
      // A broker's own KIP-951 hint, now pointing at epochgate.
      if constexpr (codec::kCarriesHints<M>)
        for (int i = 0; i < r.rewritten; ++i) ctx_.metrics->hint("rewritten");
    }
    touched = touched || r.rewritten > 0;
  }
  // 4. and 5. Merge a split request's local part, backfill hints (the
  // policy adds epochgate addresses only).
  if constexpr (A::kDecided)
    if (policy) touched = policy->amend_response(e, &m, e.api_version, node_id_) || touched;
  // 6. A Produce with reroutes stays decoded: the leaders' answers merge
  // into it and it is encoded once, when every part is in (finish_rerouted).
  if constexpr (std::is_same_v<M, codec::ProduceResponse>) {
    if (e.reroute) {
      RerouteState& st = *e.reroute;
      st.response = std::move(m);
      st.response_header = h;
      st.response_trailing = trailing;
      st.response_changed = touched;
      made = Made::kKept;
      return true;
    }
  }
  // 7. Encode, only when something changed.
  if (!touched) return true;
  made = Made::kChanged;
  if constexpr (std::is_same_v<M, codec::MetadataResponse>) {
    // Only the Brokers array changed: the topics and partitions after it
    // go out as the broker's own bytes.
    if (e.upstream_version == e.api_version &&
        splice_metadata_brokers(m, e.api_version, h, body, body_len, out, tail))
      return true;
  }
  encode_response_frame(h, m, e.api_version, out, trailing);
  return true;
}

bool ResponsePath::splice_metadata_brokers(const codec::MetadataResponse& m, int16_t version,
                                           const codec::ResponseHeader& h, const uint8_t* body,
                                           size_t body_len, std::vector<uint8_t>& out,
                                           BrokerTail& tail) {
  size_t begin = 0, end = 0;
  if (!codec::metadata_brokers_span(body, body_len, version, &begin, &end).ok()) return false;
  // The header and ThrottleTimeMs as the broker sent them (the client asked
  // for the version the broker answered, so the header version is the same).
  const uint8_t* frame = body - h.size;
  out.clear();
  out.resize(4);
  out.insert(out.end(), frame, body + begin);
  codec::encode_metadata_brokers(m.brokers, version, out);
  tail.data = body + end;
  tail.len = body_len - end;
  write_be32(out.data(), static_cast<uint32_t>(out.size() - 4 + tail.len));
  return true;
}

}  // namespace epochgate::proxy
