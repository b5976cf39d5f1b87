// proxy/client/upstream_dialer.h: dials one connection to an upstream broker, for a
// session or the refresher alike: tries each target in turn (resolve, connect)
// under one deadline per target, and counts a connection as up only once the
// broker has answered epochgate's own ApiVersions request on it. A socket the
// kernel established but the broker never accepted (a full listen backlog, a
// hung broker) answers nothing; without the answer a client would wait on it
// with no deadline of its own (docs/architecture.md invariant 9). The probe
// is off (set_probe) for sessions whose clients log in with SASL themselves:
// a Kafka SASL listener takes one ApiVersions before SaslHandshake, and that
// one is the client's; their connection counts as up once TCP (and TLS) is.
// Owns the attempts' sockets until one is handed over. Never reads or writes a
// client's bytes and never hands its probe's answer to anyone as a response.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codec/api_version_ranges.h"
#include "config/config.h"
#include "proxy/core/dialer.h"
#include "proxy/net/buffer_pool.h"
#include "proxy/net/connection.h"
#include "proxy/net/tcp_transport.h"
#include "proxy/tls/tls_services.h"

namespace epochgate::proxy {

/// Dials a broker connection: resolve, connect and an answered ApiVersions
/// (Kafka protocol, KIP-35; v0, which every broker since 0.10 answers), each
/// target within `timeout_ms`. All calls and callbacks on the loop thread.
class UpstreamDialer : public Dialer, public ConnectionOwner {
 public:
  /// Where an attempt failed (proxy/core/dialer.h).
  using Stage = DialStage;
  static const char* stage_name(Stage s);
  /// One failed attempt (proxy/core/dialer.h).
  using Failure = DialFailure;
  /// Receives the dialer's results (proxy/core/dialer.h).
  using Owner = DialerOwner;

  /// With `tls` (upstream_tls on), each attempt speaks TLS to the target's
  /// host (SNI, hostname check) before the ApiVersions probe.
  UpstreamDialer(uv_loop_t* loop, BufferPool& pool, Owner& owner, tls::TlsServices tls = {});
  /// Replaces the TLS services for later attempts.
  void set_tls(const tls::TlsServices& tls) { tls_ = tls; }
  ~UpstreamDialer() override;
  UpstreamDialer(const UpstreamDialer&) = delete;
  UpstreamDialer& operator=(const UpstreamDialer&) = delete;

  /// Starts dialing `targets` in order, giving each `timeout_ms` (resolve,
  /// connect and answer together). `client_id` names epochgate in the
  /// ApiVersions request. Cancels a dial in progress.
  void dial(std::vector<config::HostPort> targets, uint32_t timeout_ms,
            std::string client_id) override;
  /// Builds the byte stream over each attempt's TCP socket (before it
  /// connects), e.g. TLS wrapping the TcpTransport for `target`; the probe
  /// and everything after it go through it. Unset: the TcpTransport itself.
  using TransportWrapper = Dialer::TransportWrapper;
  void set_transport_wrapper(TransportWrapper wrap) override { wrap_ = std::move(wrap); }
  void set_probe(bool probe) override { probe_ = probe; }
  /// Stops dialing; the current attempt's socket closes.
  void cancel() override;
  /// Cancels and closes the timer; on_dialer_closed() follows once every
  /// socket is closed. Idempotent.
  void close() override;
  bool dialing() const { return attempt_ != nullptr; }
  /// Correlation id of the probe (epochgate's own; never a client's).
  static constexpr int32_t kProbeCorrelationId = 0x45470001;

  // ConnectionOwner (attempt sockets only).
  void on_readable(Connection& c) override;
  void on_read_error(Connection& c, int status) override;
  void on_drained(Connection&) override {}
  void on_write_error(Connection& c, int status) override;
  void on_closed(Connection& c) override;

 private:
  struct Attempt;
  struct ResolveReq;

  void start_target();
  static void on_resolved(uv_getaddrinfo_t* req, int status, addrinfo* res);
  static void on_connected(uv_connect_t* req, int status);
  static void on_timeout(uv_timer_t* t);
  void send_probe();
  /// Gives the current attempt's connection to the owner (reading stopped).
  void hand_over(const ApiVersionRanges& versions);
  /// Ends the current attempt as failed and moves on.
  void attempt_failed(Stage stage, int status);
  /// Retires the current attempt's socket (closing) and forgets the attempt.
  void drop_attempt();
  void maybe_closed();

  uv_loop_t* loop_;
  TransportWrapper wrap_;
  bool probe_ = true;
  BufferPool& pool_;
  Owner& owner_;
  tls::TlsServices tls_;
  uv_timer_t timer_;
  std::vector<config::HostPort> targets_;
  size_t index_ = 0;
  uint32_t timeout_ms_ = 0;
  std::string client_id_;
  std::unique_ptr<Attempt> attempt_;
  std::vector<std::unique_ptr<Connection>> closing_;
  std::vector<ResolveReq*> resolving_;  // outstanding getaddrinfo requests
  uint64_t generation_ = 0;  // bumped by dial()/cancel(): stale callbacks stop
  bool closed_ = false;
  bool timer_closed_ = false;
  bool reported_closed_ = false;
};

}  // namespace epochgate::proxy
