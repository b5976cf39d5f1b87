// tests/policy/policy_test_support.h: builders shared by the policy unit
// tests: Metadata responses, a standard cluster view, a fake EndpointResolver
// (epochgate addresses "epochgate.test:190NN", upstream "broker-N.upstream"),
// encode/decode helpers and the hint invariant check. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "codec/message_io.h"
#include "codec/messages/all.h"
#include "policy/answer.h"
#include "policy/compiled_policy.h"
#include "policy/decide.h"
#include "policy/metadata_view.h"

namespace epochgate::policy::testing {

inline codec::Uuid uuid(uint8_t seed) {
  codec::Uuid u{};
  for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<uint8_t>(seed * 17 + i + 1);
  return u;
}

struct PartSpec {
  PartSpec(int32_t p, int32_t l, int32_t e, std::vector<int32_t> r, std::vector<int32_t> i = {},
           int16_t err = 0)
      : partition(p), leader(l), epoch(e), replicas(std::move(r)), isr(std::move(i)), error(err) {}
  int32_t partition = 0;
  int32_t leader = -1;
  int32_t epoch = -1;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;  ///< empty: same as replicas
  int16_t error = 0;
};

struct TopicSpec {
  TopicSpec(std::string n, codec::Uuid i, std::vector<PartSpec> p, int16_t err = 0)
      : name(std::move(n)), id(i), parts(std::move(p)), error(err) {}
  std::string name;
  codec::Uuid id{};
  std::vector<PartSpec> parts;
  int16_t error = 0;
};

inline std::string upstream_host(int32_t node) {
  return "broker-" + std::to_string(node) + ".upstream";
}

/// A Metadata response naming brokers `nodes` (upstream addresses) and `topics`.
inline codec::MetadataResponse metadata(const std::vector<int32_t>& nodes,
                                        const std::vector<TopicSpec>& topics) {
  codec::MetadataResponse r;
  for (int32_t n : nodes) {
    codec::MetadataResponse::MetadataResponseBroker b;
    b.node_id = n;
    b.host = upstream_host(n);
    b.port = 9092;
    b.rack = "rack-" + std::to_string(n % 2);
    r.brokers.push_back(b);
  }
  for (const auto& t : topics) {
    codec::MetadataResponse::MetadataResponseTopic mt;
    mt.error_code = t.error;
    mt.name = t.name;
    mt.topic_id = t.id;
    for (const auto& p : t.parts) {
      codec::MetadataResponse::MetadataResponsePartition mp;
      mp.error_code = p.error;
      mp.partition_index = p.partition;
      mp.leader_id = p.leader;
      mp.leader_epoch = p.epoch;
      mp.replica_nodes = p.replicas;
      mp.isr_nodes = p.isr.empty() ? p.replicas : p.isr;
      mt.partitions.push_back(mp);
    }
    r.topics.push_back(mt);
  }
  return r;
}

/// epochgate's listeners: node n -> epochgate.test:19000+n (nodes in `missing` have none).
class FakeEndpoints : public EndpointResolver {
 public:
  std::vector<int32_t> missing;
  std::optional<AdvertisedEndpoint> advertised(int32_t node_id) const override {
    for (int32_t m : missing)
      if (m == node_id) return std::nullopt;
    return AdvertisedEndpoint{"epochgate.test", 19000 + node_id};
  }
};

/// The standard cluster used by the decision tests. Brokers 1-4; broker 4
/// hosts no replica of "orders". Topic "orders" (id uuid(1)):
///   p0: leader 1, epoch 5, replicas [1,2,3]
///   p1: leader 2, epoch 7, replicas [2,3,1]
///   p2: leader 3, epoch 9, replicas [3,1,2]
/// Topic "payments" (id uuid(2)): p0 leader 2 epoch 3 replicas [2,3,4].
/// Learned at t = 1000 ms through the refresher (Metadata v12).
/// True when `rep` asks the refresher for `topic` (by name).
inline bool asks_for(const LearnReport& rep, const std::string& topic) {
  for (const auto& t : rep.urgent_refresh)
    if (t.name == topic) return true;
  return false;
}

inline constexpr uint64_t kLearnedAt = 1000;
inline void learn_standard_cluster(MetadataView& view, uint64_t at = kLearnedAt) {
  auto md =
      metadata({1, 2, 3, 4}, {TopicSpec{"orders",
                                        uuid(1),
                                        {PartSpec{0, 1, 5, {1, 2, 3}}, PartSpec{1, 2, 7, {2, 3, 1}},
                                         PartSpec{2, 3, 9, {3, 1, 2}}}},
                              TopicSpec{"payments", uuid(2), {PartSpec{0, 2, 3, {2, 3, 4}}}}});
  view.learn_metadata(md, 12, at, Source::kRefresher);
}

/// Encodes a message body at `version`.
template <class M>
std::vector<uint8_t> encode_body(const M& m, int16_t version) {
  std::vector<uint8_t> out;
  codec::Writer w(out);
  m.encode(w, version);
  return out;
}

/// Decodes a body; fails the test when the codec refuses it.
template <class M>
M decode_body(const std::vector<uint8_t>& bytes, int16_t version) {
  M m;
  codec::Status s = codec::decode_body(bytes.data(), bytes.size(), version, m);
  EXPECT_TRUE(s.ok()) << M::kName << " v" << version << ": " << s.message();
  return m;
}

/// A policy with the configuration defaults (enforce, inject on,
/// max staleness 300 s, refresh-before-fence 5 s, hold 500 ms).
inline CompiledPolicy default_policy() {
  return CompiledPolicy::compile(config::PolicyConfig{});
}

/// Checks docs/architecture.md invariant 5 on the NodeEndpoints of a response: every
/// hinted node appears there with epochgate's address (never upstream).
template <class NodeEndpoints>
void expect_endpoints_cover(const NodeEndpoints& eps, int32_t node) {
  bool found = false;
  for (const auto& n : eps) {
    EXPECT_EQ(n.host.find(".upstream"), std::string::npos) << "upstream address leaked";
    if (n.node_id == node) {
      found = true;
      EXPECT_EQ(n.host, "epochgate.test");
      EXPECT_EQ(n.port, 19000 + node);
    }
  }
  EXPECT_TRUE(found) << "hinted node " << node << " missing from NodeEndpoints";
}

/// One partition of a request: number and request epoch (-1: none).
struct Req {
  Req(int32_t p, int32_t e = -1) : partition(p), epoch(e) {}
  int32_t partition = 0;
  int32_t epoch = -1;
};
struct ReqTopic {
  std::string name;
  codec::Uuid id{};
  std::vector<Req> parts;
};

/// The standard cluster's topics as request topics.
inline ReqTopic orders(std::vector<Req> parts) {
  return ReqTopic{"orders", uuid(1), std::move(parts)};
}
inline ReqTopic payments(std::vector<Req> parts) {
  return ReqTopic{"payments", uuid(2), std::move(parts)};
}

inline const uint8_t kRecordBytes[] = {0xde, 0xad, 0xbe, 0xef};

inline codec::ProduceRequest produce_request(int16_t version, const std::vector<ReqTopic>& topics,
                                             int16_t acks = -1) {
  codec::ProduceRequest r;
  r.acks = acks;
  r.timeout_ms = 30000;
  for (const auto& t : topics) {
    auto& td = r.topic_data.emplace_back();
    if (version >= 13)
      td.topic_id = t.id;
    else
      td.name = t.name;
    for (const auto& p : t.parts) {
      auto& pd = td.partition_data.emplace_back();
      pd.index = p.partition;
      pd.records = codec::Bytes{kRecordBytes, sizeof kRecordBytes, false};
    }
  }
  return r;
}

inline codec::FetchRequest fetch_request(int16_t version, const std::vector<ReqTopic>& topics) {
  codec::FetchRequest r;
  r.replica_id = -1;
  r.max_wait_ms = 500;
  r.min_bytes = 1;
  for (const auto& t : topics) {
    auto& ft = r.topics.emplace_back();
    if (version >= 13)
      ft.topic_id = t.id;
    else
      ft.topic = t.name;
    for (const auto& p : t.parts) {
      auto& fp = ft.partitions.emplace_back();
      fp.partition = p.partition;
      fp.current_leader_epoch = version >= 9 ? p.epoch : -1;
      fp.fetch_offset = 100;
      fp.partition_max_bytes = 1 << 20;
    }
  }
  return r;
}

inline codec::ListOffsetsRequest list_offsets_request(int16_t version,
                                                      const std::vector<ReqTopic>& topics) {
  codec::ListOffsetsRequest r;
  r.replica_id = -1;
  for (const auto& t : topics) {
    auto& lt = r.topics.emplace_back();
    lt.name = t.name;
    for (const auto& p : t.parts) {
      auto& lp = lt.partitions.emplace_back();
      lp.partition_index = p.partition;
      lp.current_leader_epoch = version >= 4 ? p.epoch : -1;
      lp.timestamp = -1;
    }
  }
  return r;
}

inline codec::OffsetForLeaderEpochRequest offset_for_leader_epoch_request(
    int16_t version, const std::vector<ReqTopic>& topics, int32_t replica_id = -2) {
  codec::OffsetForLeaderEpochRequest r;
  r.replica_id = replica_id;
  for (const auto& t : topics) {
    auto& ot = r.topics.emplace_back();
    ot.topic = t.name;
    for (const auto& p : t.parts) {
      auto& op = ot.partitions.emplace_back();
      op.partition = p.partition;
      op.current_leader_epoch = version >= 2 ? p.epoch : -1;
      op.leader_epoch = 3;
    }
  }
  return r;
}

inline codec::ShareFetchRequest share_fetch_request(const std::vector<ReqTopic>& topics,
                                                    bool with_acks = false) {
  codec::ShareFetchRequest r;
  r.group_id = "share-group";
  r.member_id = "member-1";
  r.share_session_epoch = 1;
  for (const auto& t : topics) {
    auto& ft = r.topics.emplace_back();
    ft.topic_id = t.id;
    for (const auto& p : t.parts) {
      auto& fp = ft.partitions.emplace_back();
      fp.partition_index = p.partition;
      if (with_acks) fp.acknowledgement_batches.push_back({10, 12, {1}, {}});
    }
  }
  return r;
}

inline codec::ShareAcknowledgeRequest share_acknowledge_request(
    const std::vector<ReqTopic>& topics) {
  codec::ShareAcknowledgeRequest r;
  r.group_id = "share-group";
  r.member_id = "member-1";
  r.share_session_epoch = 2;
  for (const auto& t : topics) {
    auto& at = r.topics.emplace_back();
    at.topic_id = t.id;
    for (const auto& p : t.parts) {
      auto& ap = at.partitions.emplace_back();
      ap.partition_index = p.partition;
      ap.acknowledgement_batches.push_back({10, 12, {1}, {}});
    }
  }
  return r;
}

inline codec::ReadShareGroupStateRequest read_state_request(const std::vector<ReqTopic>& topics) {
  codec::ReadShareGroupStateRequest r;
  r.group_id = "share-group";
  for (const auto& t : topics) {
    auto& rt = r.topics.emplace_back();
    rt.topic_id = t.id;
    for (const auto& p : t.parts) rt.partitions.push_back({p.partition, p.epoch, {}});
  }
  return r;
}

inline codec::WriteShareGroupStateRequest write_state_request(const std::vector<ReqTopic>& topics) {
  codec::WriteShareGroupStateRequest r;
  r.group_id = "share-group";
  for (const auto& t : topics) {
    auto& wt = r.topics.emplace_back();
    wt.topic_id = t.id;
    for (const auto& p : t.parts) {
      auto& wp = wt.partitions.emplace_back();
      wp.partition = p.partition;
      wp.state_epoch = 1;
      wp.leader_epoch = p.epoch;
      wp.start_offset = 0;
    }
  }
  return r;
}

}  // namespace epochgate::policy::testing
