// metrics/side.h: which end of a proxied pair a connection is, and its
// `side` label value in the families that carry one
// (epochgate_connections_*, epochgate_tls_*). Header only.
#pragma once

namespace epochgate::metrics {

/// Which end of a proxied pair a connection is: a client's connection to
/// epochgate, or epochgate's own to a broker.
enum class Side { kClient, kUpstream };

/// The `side` label value: "client" or "upstream".
constexpr const char* side_label(Side s) { return s == Side::kClient ? "client" : "upstream"; }

}  // namespace epochgate::metrics
