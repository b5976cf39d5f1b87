// config/validate.cc: whole-config validation after parsing: value ranges
// and the relations between settings, as a list of rules (kRules) that each
// report located problems. Never opens the files a config names (that is
// --check-config's file check) and never applies anything.
#include "config/loader.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <type_traits>
#include <variant>

#include "config/checker.h"
#include "config/config_text.h"
#include "config/keys.h"
#include "config/tls_rules.h"
#include "config/value_parsers.h"

namespace epochgate::config {
namespace {

using detail::Checker;
using detail::is_choice;
using detail::join;
using detail::Keys;
using detail::quoted;

std::string canonical_host(const std::string& h) {
  if (h == "localhost") return "127.0.0.1";
  if (h == "[::]" || h.empty()) return "::";
  return h;
}

bool is_wildcard(const std::string& h) {
  return h == "0.0.0.0" || h == "::";
}

bool hosts_overlap(const std::string& a, const std::string& b) {
  const std::string ca = canonical_host(a), cb = canonical_host(b);
  return ca == cb || is_wildcard(ca) || is_wildcard(cb);
}

struct Bind {
  std::string path;   // setting that asks for the port
  std::string label;  // how a person names it
  std::string host;
  uint16_t port;
};

// Cipher settings OpenSSL would refuse when the contexts are built: refused
// here, with the setting's line, before anything starts.
void check_tls_ciphers(const Config& c, const ValidateOptions& options, Checker& ck) {
  struct Side {
    const char* prefix;
    bool on;
    const std::string& list;
    const std::string& suites;
  };
  const Side sides[] = {{"tls", c.tls.enabled(), c.tls.cipher_list, c.tls.cipher_suites},
                        {"upstream_tls", c.upstream_tls.enabled, c.upstream_tls.cipher_list,
                         c.upstream_tls.cipher_suites}};
  for (const Side& s : sides) {
    const std::string list_key = std::string(s.prefix) + ".cipher_list";
    const std::string suites_key = std::string(s.prefix) + ".cipher_suites";
    if (ck.usable(list_key) && (s.on || ck.set_explicitly(list_key))) {
      const std::string why = tls12_cipher_list_problem(s.list);
      if (!why.empty()) ck.report(list_key, why);
    }
    if (ck.usable(suites_key) && (s.on || ck.set_explicitly(suites_key))) {
      const std::string why = tls13_suites_problem(s.suites);
      if (!why.empty()) ck.report(suites_key, why);
    }
  }
}

bool loopback_host(const std::string& h) {
  return h.rfind("127.", 0) == 0 || h == "::1" || h == "[::1]" || h == "localhost";
}

// Sidecar credential mode lends epochgate's principal to whoever connects:
// only where that is the pod itself (loopback), a client proved who it is
// (a required certificate), or the operator said the network is the
// boundary.
void check_identity_lending(const Config& c, const ValidateOptions& options, Checker& ck) {
  const auto& s = c.upstream_sasl;
  const char* key = "upstream_sasl.on_behalf_of_clients";
  if (!s.on_behalf_of_clients || s.allow_remote_clients || !ck.usable(key)) return;
  if (c.tls.enabled() && c.tls.client_auth == "required") return;
  const std::string& broker_host =
      c.broker_ports.bind_host.empty() ? c.listen.host : c.broker_ports.bind_host;
  for (const std::string* host : {&c.listen.host, &broker_host}) {
    if (loopback_host(*host)) continue;
    ck.report(key, "lends epochgate's SASL principal to every client that can reach " +
                       quoted(*host) +
                       ": listen on loopback, require client certificates (tls.client_auth: "
                       "required), or set upstream_sasl.allow_remote_clients: true");
    return;
  }
}

void check_port_clashes(const Config& c, const ValidateOptions& options, Checker& ck) {
  const std::string broker_host =
      c.broker_ports.bind_host.empty() ? c.listen.host : c.broker_ports.bind_host;
  std::vector<Bind> binds;
  if (ck.usable("listen") && c.listen.port != 0) {
    binds.push_back({"listen", "the bootstrap listener", c.listen.host, c.listen.port});
  }
  if (c.admin.enabled && ck.usable("admin.listen") && ck.usable("admin.enabled") &&
      c.admin.listen.port != 0) {
    binds.push_back(
        {"admin.listen", "the admin listener", c.admin.listen.host, c.admin.listen.port});
  }
  const bool map_usable = ck.usable("broker_ports.map") && ck.usable("broker_ports.bind_host");
  if (map_usable) {
    for (const auto& [id, port] : c.broker_ports.map) {
      binds.push_back({"broker_ports.map." + std::to_string(id),
                       "node " + std::to_string(id) + "'s broker port", broker_host, port});
    }
  }
  for (std::size_t i = 0; i < binds.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const Bind& a = binds[j];
      const Bind& b = binds[i];
      if (a.port == b.port && hosts_overlap(a.host, b.host)) {
        ck.report(b.path, "port clash: " + std::to_string(b.port) + " is also " + a.label + " (" +
                              a.path + " at " + ck.location_text(a.path) + ")");
      }
    }
  }
  // base + node id for ids 0..max_node_id that have no map entry.
  const auto& b = c.broker_ports;
  if (b.base == 0 || !ck.usable("broker_ports.base") || !ck.usable("broker_ports.max_node_id") ||
      !map_usable) {
    return;
  }
  const uint32_t last = static_cast<uint32_t>(b.base) + static_cast<uint32_t>(b.max_node_id);
  for (const Bind& bind : binds) {
    if (bind.port < b.base || bind.port > last || !hosts_overlap(bind.host, broker_host)) continue;
    const int32_t id = static_cast<int32_t>(bind.port - b.base);
    if (b.map.count(id)) continue;  // that node uses its map entry instead
    ck.report(bind.path, "port clash: " + std::to_string(bind.port) + " is node " +
                             std::to_string(id) + "'s broker port under broker_ports.base " +
                             std::to_string(b.base) + " (node ids 0.." +
                             std::to_string(b.max_node_id) + " use base + id)");
  }
}

// Clients are handed advertise_host (or the listen host) as every broker's
// host: a wildcard there is an address no client can connect to (Kafka's
// advertised.listeners trap). One-port SNI routing advertises its pattern
// instead, so it is exempt.
void check_advertised_host(const Config& c, const ValidateOptions& options, Checker& ck) {
  if (c.tls.sni.enabled() || !ck.usable("advertise_host") || !ck.usable("listen")) return;
  const std::string host = canonical_host(c.effective_advertise_host());
  if (!is_wildcard(host)) return;
  if (c.advertise_host.empty()) {
    ck.report("listen", c.listen.host +
                            " is a wildcard address and advertise_host is not set: clients would "
                            "be told to reach every broker at " + c.listen.host +
                            ":<port>; set advertise_host (--advertise-host) to the name or "
                            "address clients reach epochgate by");
  } else {
    ck.report("advertise_host", quoted(c.advertise_host) +
                                    " is a wildcard address, not one clients can connect to; "
                                    "use the name or address clients reach epochgate by");
  }
}

// upstream_tls files without `enabled: true` would leave every broker
// connection in plaintext (SASL PLAIN passwords included) without a word.
void check_upstream_tls_enabled(const Config& c, const ValidateOptions& options, Checker& ck) {
  const UpstreamTlsConfig& u = c.upstream_tls;
  if (!ck.usable("upstream_tls") || u.enabled) return;
  const std::pair<const char*, const std::string*> files[] = {
      {"upstream_tls.ca_file", &u.ca_file},
      {"upstream_tls.cert_file", &u.cert_file},
      {"upstream_tls.key_file", &u.key_file},
      {"upstream_tls.key_password_file", &u.key_password_file}};
  for (const auto& [key, value] : files) {
    if (value->empty()) continue;
    ck.report(key, "is set but upstream_tls.enabled is not true: connections to the brokers "
                   "would be plaintext; add `enabled: true` (or remove the upstream_tls files)");
    return;  // one report says it
  }
}

// Rerouting is part of enforcing; a rule that turns fencing off would
// silently ignore its `reroute: true`.
void check_reroute_modes(const Config& c, const ValidateOptions& options, Checker& ck) {
  const auto& rules = c.policy.rules;
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const std::string rp = "policy.rules[" + std::to_string(i) + "]";
    if (!rules[i].reroute || rules[i].mode != Mode::kOff || !ck.usable(rp + ".mode")) continue;
    ck.report(ck.set_explicitly(rp + ".reroute") ? rp + ".reroute" : rp,
              "reroute: true on a rule whose mode is off does nothing (rerouting needs "
              "enforce, or observe to count what it would reroute)");
  }
}

// Host names, and at least one upstream broker where a start needs one.
void check_hosts(const Config& c, const ValidateOptions& options, Checker& ck) {
  if (ck.usable("advertise_host") && !c.advertise_host.empty() && !valid_host(c.advertise_host)) {
    ck.report("advertise_host", quoted(c.advertise_host) + " is not a valid host name or address");
  }
  if (ck.usable("broker_ports.bind_host") && !c.broker_ports.bind_host.empty() &&
      !valid_host(c.broker_ports.bind_host)) {
    ck.report("broker_ports.bind_host",
              quoted(c.broker_ports.bind_host) + " is not a valid host name or address");
  }
  if (ck.usable("bootstrap_servers")) {
    if (c.bootstrap_servers.empty() && options.require_bootstrap) {
      ck.report("bootstrap_servers",
                "at least one upstream broker is required (bootstrap_servers or --bootstrap)");
    }
    for (std::size_t i = 0; i < c.bootstrap_servers.size(); ++i) {
      const std::string p = "bootstrap_servers[" + std::to_string(i) + "]";
      if (ck.usable(p) && c.bootstrap_servers[i].port == 0) {
        ck.report(p, "port 0 is not a broker port (1..65535)");
      }
    }
  }
}

// Every integer key within its bounds from config/keys.def.
void check_integer_ranges(const Config& c, const ValidateOptions& options, Checker& ck) {
  for (const KeySpec& k : config_keys()) {
    if (!k.is_integer() || k.field == nullptr) continue;
    const uint64_t value = std::visit(
        [](auto* member) -> uint64_t {
          using T = std::remove_pointer_t<decltype(member)>;
          if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
            if constexpr (std::is_signed_v<T>) {
              if (*member < 0) return 0;
            }
            return static_cast<uint64_t>(*member);
          } else {
            return 0;
          }
        },
        field_of(k, c));
    ck.range(k.path, value, k.min, k.max);
  }

}

// The node-id port range fits under 65535, and mapped ports are real.
void check_broker_ports(const Config& c, const ValidateOptions& options, Checker& ck) {
  const auto& b = c.broker_ports;
  if (b.base != 0 && ck.usable("broker_ports.base") && ck.usable("broker_ports.max_node_id") &&
      static_cast<uint32_t>(b.base) + static_cast<uint32_t>(b.max_node_id) > 65535) {
    ck.report("broker_ports.base", "base " + std::to_string(b.base) + " + max_node_id " +
                                       std::to_string(b.max_node_id) +
                                       " passes the highest port 65535");
  }
  for (const auto& [id, port] : b.map) {
    const std::string p = "broker_ports.map." + std::to_string(id);
    if (ck.usable(p) && port == 0)
      ck.report(p, "port 0 is not allowed for a mapped node (1..65535)");
  }
}

// Watermarks in order, and a budget that holds at least one full queue.
void check_limits(const Config& c, const ValidateOptions& options, Checker& ck) {
  const auto& l = c.limits;
  if (ck.usable("limits.low_watermark_bytes") && ck.usable("limits.high_watermark_bytes") &&
      l.low_watermark_bytes >= l.high_watermark_bytes) {
    const char* at = ck.set_explicitly("limits.low_watermark_bytes")
                         ? "limits.low_watermark_bytes"
                         : "limits.high_watermark_bytes";
    ck.report(at, "low watermark (" + std::to_string(l.low_watermark_bytes) +
                      ") must be below the high watermark (" +
                      std::to_string(l.high_watermark_bytes) + ")");
  }
  if (ck.usable("limits.buffer_budget_bytes") && ck.usable("limits.high_watermark_bytes") &&
      l.buffer_budget_bytes != 0 && l.buffer_budget_bytes < l.high_watermark_bytes) {
    ck.report("limits.buffer_budget_bytes", "buffer budget (" +
                                                std::to_string(l.buffer_budget_bytes) +
                                                ") must be at least the high watermark (" +
                                                std::to_string(l.high_watermark_bytes) + ")");
  }

}

// Hold and staleness bounds in order, rules with topics, and a reroute wait
// the refresher can serve.
void check_policy(const Config& c, const ValidateOptions& options, Checker& ck) {
  const auto& p = c.policy;
  if (ck.usable("policy.refresh_before_fence_ms") && ck.usable("policy.max_staleness_ms") &&
      p.refresh_before_fence_ms > p.max_staleness_ms) {
    ck.report("policy.refresh_before_fence_ms", std::to_string(p.refresh_before_fence_ms) +
                                                    " must not exceed policy.max_staleness_ms (" +
                                                    std::to_string(p.max_staleness_ms) + ")");
  }
  for (std::size_t i = 0; i < p.rules.size(); ++i) {
    const std::string rp = "policy.rules[" + std::to_string(i) + "].topics";
    if (ck.usable(rp) && p.rules[i].topics.empty()) ck.report(rp, "must not be empty (use \"*\")");
  }
  // A reroute that waits for its new leader asks for an urgent refresh,
  // which the refresher sends at most once per urgent_min_interval_ms: a
  // shorter wait can end before that refresh may go out (docs/rerouting.md).
  bool reroutes = false;
  for (const auto& r : p.rules) reroutes = reroutes || r.reroute;
  const auto& rr = c.reroute;
  if (reroutes && c.refresher.enabled && ck.usable("reroute.max_wait_ms") &&
      ck.usable("refresher.urgent_min_interval_ms") && rr.max_wait_ms > 0 &&
      rr.max_wait_ms < c.refresher.urgent_min_interval_ms) {
    const char* at = ck.set_explicitly("reroute.max_wait_ms") ? "reroute.max_wait_ms"
                                                              : "refresher.urgent_min_interval_ms";
    ck.report(at, "reroute.max_wait_ms (" + std::to_string(rr.max_wait_ms) +
                      ") must be 0 or at least refresher.urgent_min_interval_ms (" +
                      std::to_string(c.refresher.urgent_min_interval_ms) +
                      "): a reroute's urgent refresh may not go out sooner");
  }

}

// A topic idle time long enough to outlast the use stamp.
void check_topic_idle(const Config& c, const ValidateOptions& options, Checker& ck) {
  // A use is stamped at most every TopicEntry::kUseStampMs: a shorter idle
  // time would forget topics in constant use.
  const uint32_t idle = c.refresher.topic_idle_ms;
  if (ck.usable("refresher.topic_idle_ms") && idle > 0 && idle < 1000) {
    ck.report("refresher.topic_idle_ms",
              "must be 0 (topics stay) or at least 1000, got " + std::to_string(idle));
  }

}

// TLS keys that go together (file contents load at start and reload).
void check_tls_files(const Config& c, const ValidateOptions& options, Checker& ck) {
  const TlsConfig& t = c.tls;
  if (ck.usable("tls")) {
    if (t.enabled() && t.key_file.empty()) ck.report("tls.key_file", "tls.cert_file needs a key_file");
    if (!t.enabled()) {
      const std::pair<const char*, const std::string*> set[] = {
          {"tls.key_file", &t.key_file},
          {"tls.key_password_file", &t.key_password_file},
          {"tls.client_ca_file", &t.client_ca_file}};
      for (const auto& [k, v] : set)
        if (!v->empty()) ck.report(k, "needs tls.cert_file (client-facing TLS is off)");
      if (!t.sni.broker_host_pattern.empty())
        ck.report("tls.sni.broker_host_pattern", "needs tls.cert_file (SNI routing is TLS)");
    }
    if (t.client_auth != "none" && t.client_ca_file.empty() && ck.usable("tls.client_auth"))
      ck.report("tls.client_auth", t.client_auth + " needs tls.client_ca_file");
    const std::string& pat = t.sni.broker_host_pattern;
    if (!pat.empty()) {
      const auto at = pat.find("$(nodeId)");
      if (at == std::string::npos || pat.find("$(nodeId)", at + 1) != std::string::npos)
        ck.report("tls.sni.broker_host_pattern", quoted(pat) + " must contain $(nodeId) once");
      else if (pat.find_first_of(" :/*") != std::string::npos)
        ck.report("tls.sni.broker_host_pattern", quoted(pat) + " is not a host name pattern");
    }
  }
  const UpstreamTlsConfig& u = c.upstream_tls;
  if (ck.usable("upstream_tls") && u.enabled && (u.cert_file.empty() != u.key_file.empty()))
    ck.report(u.cert_file.empty() ? "upstream_tls.cert_file" : "upstream_tls.key_file",
              "upstream_tls.cert_file and key_file go together (mTLS)");

}

// upstream_sasl: a mechanism's credentials, and lending only with a login.
void check_upstream_sasl(const Config& c, const ValidateOptions& options, Checker& ck) {
  const auto& sasl = c.upstream_sasl;
  if (ck.usable("upstream_sasl.on_behalf_of_clients") && sasl.on_behalf_of_clients &&
      !sasl.enabled())
    ck.report("upstream_sasl.on_behalf_of_clients", "needs upstream_sasl.mechanism");
  if (ck.usable("upstream_sasl") && sasl.enabled()) {
    if (sasl.mechanism == "OAUTHBEARER") {
      if (sasl.token_file.empty())
        ck.report("upstream_sasl.token_file", "OAUTHBEARER needs a token_file");
    } else {
      if (sasl.username.empty() && sasl.username_file.empty() && sasl.username_env.empty())
        ck.report("upstream_sasl.username",
                  sasl.mechanism + " needs username, username_file or username_env");
      if (sasl.password_file.empty() && sasl.password_env.empty())
        ck.report("upstream_sasl.password_file",
                  sasl.mechanism + " needs password_file or password_env");
    }
  }

}

// Choice keys hold one of their choices (flags bypass the loader's check).
void check_choices(const Config& c, const ValidateOptions& options, Checker& ck) {
  for (const KeySpec& k : config_keys()) {
    if (k.kind != Kind::kChoice || k.field == nullptr || !ck.usable(k.path)) continue;
    const std::string& v = *std::get<std::string*>(field_of(k, c));
    if (is_choice(k, v)) continue;
    const Keys choices = k.choice_list();
    const std::string s = closest_name(v, choices);
    ck.report(k.path, quoted(v) + " is not one of " + join(choices) +
                          (s.empty() ? "" : " (did you mean " + quoted(s) + "?)"));
  }

}

using Rule = void (*)(const Config&, const ValidateOptions&, Checker&);

// In the order their problems read best when two share a line.
constexpr Rule kRules[] = {
    check_hosts,
    check_integer_ranges,
    check_broker_ports,
    check_port_clashes,
    check_tls_ciphers,
    check_identity_lending,
    check_limits,
    check_policy,
    check_topic_idle,
    check_tls_files,
    check_upstream_sasl,
    check_advertised_host,
    check_upstream_tls_enabled,
    check_reroute_modes,
    check_choices,
};

}  // namespace

std::vector<Problem> validate_config(const Config& c, const Origins& origins,
                                     const ValidateOptions& options) {
  Checker ck(origins);
  for (Rule rule : kRules) rule(c, options, ck);
  return ck.take();
}

}  // namespace epochgate::config
