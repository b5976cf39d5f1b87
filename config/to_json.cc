// config/to_json.cc: Config -> JSON with the same keys as the YAML file, in
// the order of config/keys.def within each section. Scalars are written by kind; lists and maps
// by hand below. Never writes a secret: every string goes through redaction.
#include "config/to_json.h"

#include <type_traits>
#include <variant>

#include "config/keys.h"
#include "config/value_parsers.h"
#include "common/json_writer.h"

namespace epochgate::config {
namespace {

using common::JsonWriter;

// Every string member goes through here, so a secret can only leak by being
// written some other way.
void string_member(JsonWriter& w, std::string_view key, std::string_view value) {
  w.key(key).value(redact_value(key, value));
}

void rules_member(JsonWriter& w, std::string_view key, const std::vector<PolicyRule>& rules) {
  w.key(key).begin_array();
  for (const PolicyRule& r : rules) {
    w.begin_object();
    string_member(w, "topics", r.topics);
    w.key("apis").begin_array();
    for (const std::string& a : r.apis) w.value(a);
    w.end_array();
    w.key("mode").value(mode_name(r.mode));
    w.key("reroute").value(r.reroute);
    w.end_object();
  }
  w.end_array();
}

// A list or map: the only keys without a scalar member.
void hand_written_member(JsonWriter& w, const KeySpec& k, const Config& c) {
  switch (k.kind) {
    case Kind::kHostPortList:
      w.key(k.name()).begin_array();
      for (const HostPort& hp : c.bootstrap_servers) w.value(hp.to_string());
      w.end_array();
      return;
    case Kind::kPortMap:
      w.key(k.name()).begin_object();
      for (const auto& [id, port] : c.broker_ports.map) w.key(std::to_string(id)).value(port);
      w.end_object();
      return;
    case Kind::kRules:
      rules_member(w, k.name(), c.policy.rules);
      return;
    default:
      return;  // rule keys are written by rules_member
  }
}

void scalar_member(JsonWriter& w, const KeySpec& k, const Config& c) {
  std::visit(
      [&](auto* member) {
        using T = std::remove_pointer_t<decltype(member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          string_member(w, k.name(), *member);
        } else if constexpr (std::is_same_v<T, HostPort>) {
          string_member(w, k.name(), member->to_string());
        } else if constexpr (std::is_same_v<T, Mode>) {
          w.key(k.name()).value(mode_name(*member));
        } else {
          w.key(k.name()).value(*member);
        }
      },
      field_of(k, c));
}

}  // namespace

std::string redact_value(std::string_view key, std::string_view value) {
  if (!value.empty() && is_secret_key(key)) return std::string(kRedacted);
  return std::string(value);
}

namespace {

// The keys directly under `section` ("" = top level), in table order.
void members(JsonWriter& w, std::string_view section, const Config& c) {
  for (const KeySpec& k : config_keys()) {
    if (k.parent() != section) continue;
    if (k.kind == Kind::kSection) {
      w.key(k.name()).begin_object();
      members(w, k.path, c);
      w.end_object();
    } else if (k.field != nullptr) {
      scalar_member(w, k, c);
    } else {
      hand_written_member(w, k, c);
    }
    // Derived, not a key: what clients are actually told.
    if (k.path == "advertise_host") {
      string_member(w, "effective_advertise_host", c.effective_advertise_host());
    }
  }
}

}  // namespace

std::string to_json(const Config& c) {
  JsonWriter w;
  w.begin_object();
  string_member(w, "source_file", c.source_file);
  members(w, "", c);
  w.end_object();
  return w.take();
}

}  // namespace epochgate::config
