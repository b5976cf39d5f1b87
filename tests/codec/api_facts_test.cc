// tests/codec/api_facts_test.cc: walks every API key and version of the schema
// through the generated API table ("what does epochgate do with key K at
// version V") and checks it against the behaviour recorded from the lists the
// table replaced (api_facts_expected.txt), plus the table's own invariants.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "codec/api_table.h"
#include "codec/messages/api_traits.h"

namespace epochgate::codec {
namespace {

std::string behaviour(const ApiInfo& a, int16_t v) {
  std::ostringstream o;
  o << a.key << ' ' << a.name << " v" << v << ": decided=" << a.decided.contains(v)
    << " hints=" << a.hints.contains(v) << " transform=" << a.response_decoded(v, false) << '/'
    << a.response_decoded(v, true)
    << " close_above_max=" << (a.decoded && !a.addresses.empty()) << " label=" << a.label;
  return o.str();
}

TEST(ApiFacts, EveryKeyAndVersionBehavesAsRecorded) {
  std::ifstream in(EPOCHGATE_API_FACTS_EXPECTED);
  ASSERT_TRUE(in) << EPOCHGATE_API_FACTS_EXPECTED;
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') expected.push_back(line);
  size_t i = 0;
  for (int16_t k = 0; k <= kMaxApiKey; ++k) {
    const ApiInfo* a = api_info(k);
    ASSERT_NE(a, nullptr);
    for (int16_t v = a->min_version; v <= a->max_version + 1; ++v, ++i) {
      ASSERT_LT(i, expected.size());
      EXPECT_EQ(behaviour(*a, v), expected[i]);
    }
  }
  EXPECT_EQ(i, expected.size());
}

// A fact about a version needs the codec to decode that API, and the facts
// nest: hints ride on NodeEndpoints, which are addresses.
TEST(ApiFacts, FactsNeedDecodingAndNest) {
  for (int16_t k = 0; k <= kMaxApiKey; ++k) {
    const ApiInfo& a = *api_info(k);
    SCOPED_TRACE(a.name);
    if (!a.decoded) {
      EXPECT_TRUE(a.addresses.empty());
      EXPECT_TRUE(a.decided.empty());
      EXPECT_TRUE(a.learned.empty());
      EXPECT_TRUE(a.hints.empty());
      EXPECT_STREQ(a.group, "");
    }
    EXPECT_EQ(a.addresses.empty(), std::string(a.addresses_where).empty());
    EXPECT_EQ(a.decided.empty(), a.rule == PolicyRule::kNone);
    for (int16_t v = a.min_version; v <= a.max_version; ++v) {
      if (a.hints.contains(v)) {
        EXPECT_TRUE(a.addresses.contains(v)) << "v" << v;
      }
      if (a.decided.contains(v)) {
        EXPECT_STRNE(a.group, "") << "v" << v;
      }
    }
  }
}

// The compile-time side agrees with the runtime table for every decoded key.
TEST(ApiFacts, TraitsAgreeWithTheTable) {
  int decoded = 0;
  for (int16_t k = 0; k <= kMaxApiKey; ++k) {
    const ApiInfo& a = *api_info(k);
    bool found = with_api(k, false, [&](auto api) {
      using A = decltype(api);
      using Req = typename A::Request;
      using Resp = typename A::Response;
      EXPECT_EQ(Req::kApiKey, k);
      EXPECT_EQ(Resp::kApiKey, k);
      EXPECT_EQ(A::kDecided, !a.decided.empty()) << a.name;
      EXPECT_EQ(A::kLearned, !a.learned.empty()) << a.name;
      EXPECT_EQ(kCarriesAddresses<Resp>, !a.addresses.empty()) << a.name;
      EXPECT_EQ(kCarriesHints<Resp>, !a.hints.empty()) << a.name;
      EXPECT_EQ(A::kRule, a.rule) << a.name;
      EXPECT_EQ(A::kGroup, std::string(a.group)) << a.name;
      // A decided API needs both partition shapes (the policy walks them).
      if (A::kDecided) {
        EXPECT_TRUE(PartitionShape<Req>::kPresent) << a.name;
        EXPECT_TRUE(PartitionShape<Resp>::kPresent) << a.name;
      }
      if constexpr (PartitionShape<Resp>::kPresent) {
        for (int16_t v = a.min_version; v <= a.max_version; ++v)
          EXPECT_EQ(PartitionShape<Resp>::carries_hints(v), a.hints.contains(v)) << a.name << v;
      }
      return true;
    });
    EXPECT_EQ(found, a.decoded) << a.name;
    decoded += found ? 1 : 0;
  }
  EXPECT_EQ(decoded, 15);
}

TEST(ApiFacts, AddressesAreFoundWhereTheSchemaMarksThem) {
  EXPECT_STREQ(api_info(kFindCoordinator)->addresses_where,
               "Host (v0-3), Coordinators[].Host (v4+)");
  EXPECT_STREQ(api_info(kProduce)->addresses_where, "NodeEndpoints[].Host (v10+)");
  FindCoordinatorResponse old;
  old.node_id = 1;
  old.host = "b1";
  old.coordinators.push_back({});
  int seen = 0;
  visit_addresses(old, 3, [&](int32_t& id, std::string& host, int32_t&) {
    EXPECT_EQ(id, 1);
    EXPECT_EQ(host, "b1");
    ++seen;
  });
  EXPECT_EQ(seen, 1) << "v3 has no Coordinators array";
  seen = 0;
  visit_addresses(old, 4, [&](int32_t&, std::string&, int32_t&) { ++seen; });
  EXPECT_EQ(seen, 1) << "v4 has only Coordinators";
}

}  // namespace
}  // namespace epochgate::codec
