// proxy/core/dialer.h: the seam between a session and whatever opens its
// upstream connection: UpstreamDialer (proxy/client/upstream_dialer.h) over TCP in
// epochgate, an in-memory one in unit tests. Interfaces only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codec/api_version_ranges.h"
#include "config/config.h"
#include "proxy/net/connection.h"
#include "proxy/net/tcp_transport.h"

namespace epochgate::proxy {

/// Where one failed dial attempt stopped.
enum class DialStage {
  kResolve,  ///< getaddrinfo failed or timed out
  kConnect,  ///< TCP connect refused, failed or timed out
  kTls,      ///< connected, but the TLS handshake failed or timed out (upstream_tls)
  kAnswer,   ///< connected, but no (valid) answer to ApiVersions in time (probing dials)
};

/// One failed attempt: target `index` of the list, uv error (UV_ETIMEDOUT
/// when the deadline passed, UV_EOF when the broker closed, 0 for a bad answer).
struct DialFailure {
  size_t index = 0;
  config::HostPort target;
  DialStage stage = DialStage::kConnect;
  int status = 0;
  uint64_t elapsed_ms = 0;  ///< since this target's attempt started
};

/// Receives a dialer's results, on the loop thread, never from inside a
/// Dialer call. The dialer may be destroyed only after on_dialer_closed().
class DialerOwner {
 public:
  virtual ~DialerOwner() = default;
  /// An attempt failed; the dialer goes on with the next target.
  virtual void on_dial_attempt_failed(const DialFailure& f) = 0;
  /// Target `index` is connected and answered. `conn` reads nothing until
  /// its new owner starts it (Connection::set_owner first); bytes the
  /// broker sent after the answer are still in its input. `versions` is
  /// the broker's [min, max] per API key from that answer (KIP-35).
  virtual void on_dialed(std::unique_ptr<Connection> conn, size_t index,
                         const ApiVersionRanges& versions) = 0;
  /// Every target failed (after its on_dial_attempt_failed()).
  virtual void on_dial_failed() = 0;
  /// close() finished: no handle or callback of the dialer is left.
  virtual void on_dialer_closed() {}
};

/// Opens one upstream connection from a list of targets.
class Dialer {
 public:
  virtual ~Dialer() = default;
  /// Starts dialing `targets` in order, giving each `timeout_ms`.
  /// `client_id` names epochgate in its own requests. Cancels a dial in progress.
  virtual void dial(std::vector<config::HostPort> targets, uint32_t timeout_ms,
                    std::string client_id) = 0;
  /// Builds the byte stream over each attempt's TCP socket (before it
  /// connects), e.g. TLS wrapping the TcpTransport for `target`; the probe
  /// and everything after it go through it.
  using TransportWrapper =
      std::function<std::unique_ptr<Transport>(std::unique_ptr<TcpTransport>, const config::HostPort&)>;
  /// Sets the wrapper for every later attempt. Unset: the TcpTransport itself.
  virtual void set_transport_wrapper(TransportWrapper wrap) = 0;
  /// true (the default): a connected target must answer epochgate's own
  /// ApiVersions before it is handed over, so a broker that accepts but
  /// never answers fails the attempt. false: handed over as soon as TCP
  /// connects, with empty `versions`. A Kafka SASL listener takes exactly one
  /// ApiVersions before SaslHandshake (KIP-43, KIP-152) and closes the
  /// connection at a second, so a connection whose client logs in itself
  /// must carry the client's ApiVersions as its first. For later dials.
  virtual void set_probe(bool probe) { (void)probe; }
  /// Stops dialing; the current attempt's connection closes.
  virtual void cancel() = 0;
  /// Cancels and releases everything; on_dialer_closed() follows. Idempotent.
  virtual void close() = 0;
};

}  // namespace epochgate::proxy
