// config/to_json.cc: Config -> JSON with the same keys as the YAML file.
#include "config/to_json.h"

#include "config/value_parsers.h"
#include "metrics/json_writer.h"

namespace epochgate::config {
namespace {

using metrics::JsonWriter;

// Every string member goes through here, so a secret can only leak by being
// written some other way.
void string_member(JsonWriter& w, std::string_view key, std::string_view value) {
  w.key(key).value(redact_value(key, value));
}

void host_port_member(JsonWriter& w, std::string_view key, const HostPort& hp) {
  string_member(w, key, hp.to_string());
}

}  // namespace

std::string redact_value(std::string_view key, std::string_view value) {
  if (!value.empty() && is_secret_key(key)) return std::string(kRedacted);
  return std::string(value);
}

std::string to_json(const Config& c) {
  JsonWriter w;
  w.begin_object();
  string_member(w, "source_file", c.source_file);
  host_port_member(w, "listen", c.listen);
  string_member(w, "advertise_host", c.advertise_host);
  string_member(w, "effective_advertise_host", c.effective_advertise_host());
  w.key("bootstrap_servers").begin_array();
  for (const HostPort& hp : c.bootstrap_servers) w.value(hp.to_string());
  w.end_array();

  w.key("broker_ports").begin_object();
  string_member(w, "bind_host", c.broker_ports.bind_host);
  w.key("base").value(c.broker_ports.base);
  w.key("map").begin_object();
  for (const auto& [id, port] : c.broker_ports.map) w.key(std::to_string(id)).value(port);
  w.end_object();
  w.key("max_node_id").value(c.broker_ports.max_node_id);
  w.key("max_listeners").value(c.broker_ports.max_listeners);
  w.key("absent_grace_ms").value(c.broker_ports.absent_grace_ms);
  w.key("bind_retry_max_ms").value(c.broker_ports.bind_retry_max_ms);
  w.end_object();

  w.key("workers").value(c.workers);
  w.key("drain_timeout_ms").value(c.drain_timeout_ms);

  w.key("admin").begin_object();
  w.key("enabled").value(c.admin.enabled);
  host_port_member(w, "listen", c.admin.listen);
  w.key("max_connections").value(c.admin.max_connections);
  w.key("idle_timeout_ms").value(c.admin.idle_timeout_ms);
  w.key("expose_debug").value(c.admin.expose_debug);
  w.end_object();

  const LimitsConfig& l = c.limits;
  w.key("limits").begin_object();
  w.key("max_frame_bytes").value(l.max_frame_bytes);
  w.key("max_in_flight_per_connection").value(l.max_in_flight_per_connection);
  w.key("max_connections").value(l.max_connections);
  w.key("high_watermark_bytes").value(l.high_watermark_bytes);
  w.key("low_watermark_bytes").value(l.low_watermark_bytes);
  w.key("idle_timeout_ms").value(l.idle_timeout_ms);
  w.key("partial_frame_timeout_ms").value(l.partial_frame_timeout_ms);
  w.key("buffer_budget_bytes").value(l.buffer_budget_bytes);
  w.key("upstream_connect_timeout_ms").value(l.upstream_connect_timeout_ms);
  w.key("upstream_overdue_ms").value(l.upstream_overdue_ms);
  w.key("max_partitions_per_request").value(l.max_partitions_per_request);
  w.end_object();

  const PolicyConfig& p = c.policy;
  w.key("policy").begin_object();
  w.key("default_mode").value(mode_name(p.default_mode));
  w.key("rules").begin_array();
  for (const PolicyRule& r : p.rules) {
    w.begin_object();
    string_member(w, "topics", r.topics);
    w.key("apis").begin_array();
    for (const std::string& a : r.apis) w.value(a);
    w.end_array();
    w.key("mode").value(mode_name(r.mode));
    w.end_object();
  }
  w.end_array();
  w.key("inject_epochs").value(p.inject_epochs);
  w.key("kip951_bridge").value(p.kip951_bridge);
  w.key("max_staleness_ms").value(p.max_staleness_ms);
  w.key("refresh_before_fence_ms").value(p.refresh_before_fence_ms);
  w.key("hold_timeout_ms").value(p.hold_timeout_ms);
  w.key("epoch_rollback_confirmations").value(p.epoch_rollback_confirmations);
  w.end_object();

  const RefresherConfig& r = c.refresher;
  w.key("refresher").begin_object();
  w.key("enabled").value(r.enabled);
  w.key("interval_ms").value(r.interval_ms);
  w.key("urgent_min_interval_ms").value(r.urgent_min_interval_ms);
  w.key("request_timeout_ms").value(r.request_timeout_ms);
  w.end_object();

  // Only where credentials come from: the config never holds a password
  // or token itself, so nothing here can leak one.
  const UpstreamSaslConfig& sasl = c.upstream_sasl;
  w.key("upstream_sasl").begin_object();
  string_member(w, "mechanism", sasl.mechanism);
  string_member(w, "username", sasl.username);
  string_member(w, "username_file", sasl.username_file);
  string_member(w, "username_env", sasl.username_env);
  string_member(w, "password_file", sasl.password_file);
  string_member(w, "password_env", sasl.password_env);
  string_member(w, "token_file", sasl.token_file);
  w.key("on_behalf_of_clients").value(sasl.on_behalf_of_clients);
  w.end_object();

  w.key("logging").begin_object();
  string_member(w, "level", c.logging.level);
  string_member(w, "format", c.logging.format);
  w.key("rate_limit_per_sec").value(c.logging.rate_limit_per_sec);
  w.end_object();

  w.end_object();
  return w.take();
}

}  // namespace epochgate::config
