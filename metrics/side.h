// metrics/side.h: which end of a proxied pair a connection is, and which
// way bytes flow between them, with their `side` and `direction` label
// values (epochgate_connections_*, epochgate_tls_*, epochgate_bytes_total,
// epochgate_spliced_bytes_total...). Header only.
#pragma once

namespace epochgate::metrics {

/// Which end of a proxied pair a connection is: a client's connection to
/// epochgate, or epochgate's own to a broker.
enum class Side { kClient, kUpstream };

/// The `side` label value: "client" or "upstream".
constexpr const char* side_label(Side s) { return s == Side::kClient ? "client" : "upstream"; }

/// Which way bytes flow: from clients to brokers, or back.
enum class Direction { kClientToUpstream, kUpstreamToClient };

/// The `direction` label value: "client_to_upstream" or "upstream_to_client".
constexpr const char* direction_label(Direction d) {
  return d == Direction::kClientToUpstream ? "client_to_upstream" : "upstream_to_client";
}

}  // namespace epochgate::metrics
