// proxy/tls/sni_names.h: one-port SNI routing's names: the host name each
// broker is advertised as (tls.sni.broker_host_pattern with "$(nodeId)"
// replaced), and the reverse, the node a ClientHello's server name
// (RFC 6066 section 3) asks for. Pure string work: no OpenSSL, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace epochgate::proxy::tls {

/// The node id a server name routes to for the bootstrap brokers.
constexpr int32_t kSniBootstrapNode = -1;

/// Broker host names of one SNI configuration.
class SniNames {
 public:
  /// `pattern` contains "$(nodeId)" once (the loader checks it);
  /// `bootstrap_host` may be empty; `advertise_host` is the bootstrap
  /// listener's advertised host, which also reaches the bootstrap.
  SniNames(std::string pattern, std::string bootstrap_host, std::string advertise_host);

  /// Advertised host of node `node_id` (for Metadata, FindCoordinator and hints).
  std::string host_of(int32_t node_id) const;
  /// Node a server name routes to: kSniBootstrapNode for no name (a client
  /// connecting by address), the bootstrap host or the advertised host; the
  /// node id for a name the pattern makes (DNS names compare without case,
  /// RFC 4343); nullopt for any other name.
  std::optional<int32_t> node_of(std::string_view server_name) const;

 private:
  std::string prefix_;
  std::string suffix_;
  std::string bootstrap_host_;
  std::string advertise_host_;
};

}  // namespace epochgate::proxy::tls
