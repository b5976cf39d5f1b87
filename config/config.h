// config/config.h: the effective configuration of one epochgate process, as
// read from YAML (config/loader.h) and overridden by command-line flags.
// Plain data: no I/O here. Durations are milliseconds, sizes bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace epochgate::config {

/// host:port pair as written in the config ("127.0.0.1:9092", "[::1]:9092").
struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string to_string() const;
  bool operator==(const HostPort&) const = default;
};

/// Fencing mode of a topic pattern (docs/architecture.md section 7).
enum class Mode { kEnforce, kObserve, kOff };
const char* mode_name(Mode m);  // "enforce" | "observe" | "off"

/// One policy rule: topics matching `topics` (glob: * and ?) get `mode` for
/// the listed APIs (empty: every fenced API). First matching rule wins.
struct PolicyRule {
  std::string topics = "*";
  std::vector<std::string> apis;  ///< "produce","fetch","list_offsets","offset_for_leader_epoch","share","persister"
  Mode mode = Mode::kEnforce;
  /// Produce partitions of these topics that epochgate (or the broker) finds
  /// sent to a broker that is no longer the leader are delivered to the
  /// leader by epochgate (enforce mode only; docs/rerouting.md).
  bool reroute = false;
  bool operator==(const PolicyRule&) const = default;
};

struct PolicyConfig {
  Mode default_mode = Mode::kEnforce;
  std::vector<PolicyRule> rules;
  bool inject_epochs = true;        ///< write the view's epoch into CurrentLeaderEpoch -1
  bool kip951_bridge = true;        ///< offer Produce v10 / Fetch v16 over older brokers
  uint32_t max_staleness_ms = 300000;       ///< older view entries never fence
  uint32_t refresh_before_fence_ms = 5000;  ///< older entries: refresh, then decide
  uint32_t hold_timeout_ms = 500;           ///< longest a request waits for that refresh
  /// Lower-epoch reports (same topic id) naming one leader and epoch that
  /// roll a view entry back to them (a bogus epoch must not pin the view).
  uint32_t epoch_rollback_confirmations = 3;
};

/// Rerouting of Produce partitions to their new leader (docs/rerouting.md).
struct RerouteConfig {
  /// Longest a broker's NOT_LEADER_OR_FOLLOWER is kept back waiting for a
  /// refresh to name the new leader; 0: reroute only to a leader known already.
  /// Otherwise at least refresher.urgent_min_interval_ms (the loader checks),
  /// so the wait's own urgent refresh is allowed out before it ends.
  uint32_t max_wait_ms = 150;
  /// Rerouted plus held-for-order writes per worker; 0 disables rerouting.
  uint32_t max_in_flight = 1024;
  /// Longest a write waits for order behind an earlier write of its stream
  /// still on the client's own path; 0: never waits for that.
  uint32_t max_hold_ms = 100;
};

struct RefresherConfig {
  bool enabled = true;
  uint32_t interval_ms = 30000;            ///< periodic Metadata for the view's topics (+-10%)
  uint32_t urgent_min_interval_ms = 100;   ///< rate limit for urgent refreshes
  uint32_t request_timeout_ms = 5000;
  /// A topic no request the policy decides on named for this long leaves
  /// the view and so the periodic refresh; 0: topics stay, else >= 1000.
  uint32_t topic_idle_ms = 300000;
};

/// epochgate's own SASL login on the connections it opens itself (the
/// refresher). Credentials are read from files or environment variables at
/// each login; an empty mechanism means no login.
struct UpstreamSaslConfig {
  std::string mechanism;      ///< PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 | OAUTHBEARER | ""
  std::string username;       ///< or username_file / username_env
  std::string username_file;
  std::string username_env;
  std::string password_file;  ///< or password_env (never a literal password)
  std::string password_env;
  std::string token_file;     ///< OAUTHBEARER: the token, re-read at each login
  /// Sidecar credential mode: every upstream connection a client session
  /// opens logs in with these credentials before the client's first request
  /// goes out; clients connect without SASL.
  bool on_behalf_of_clients = false;
  /// on_behalf_of_clients on a listener other than loopback, without
  /// required client certificates: the listener is then the only
  /// authentication boundary (warned at start).
  bool allow_remote_clients = false;
  bool enabled() const { return !mechanism.empty(); }
};

/// One-port SNI routing of client-facing TLS: every broker is advertised as
/// a host name built from `broker_host_pattern` on the bootstrap listener's
/// port, and each connection goes to the node its ClientHello's server name
/// (RFC 6066 section 3) names. Off while `broker_host_pattern` is empty.
struct TlsSniConfig {
  /// Advertised host of node n: "$(nodeId)" replaced by n, for example
  /// "b-$(nodeId).kafka.example.com". Must contain "$(nodeId)" exactly once.
  std::string broker_host_pattern;
  /// Server name that reaches the bootstrap brokers (any node the cluster
  /// picks); empty: a ClientHello without a server name, or with the
  /// bootstrap listener's advertised host, does.
  std::string bootstrap_host;
  bool enabled() const { return !broker_host_pattern.empty(); }
};

/// TLS 1.2 cipher suites both sides offer unless configured: forward-secret
/// (ECDHE) AEAD suites only (AES-GCM, ChaCha20-Poly1305), OpenSSL's names.
inline constexpr const char* kDefaultTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
/// TLS 1.3 suites (RFC 8446 B.4) both sides offer unless configured:
/// OpenSSL's own default set, every one forward-secret and AEAD.
inline constexpr const char* kDefaultTls13Suites =
    "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256";

/// Client-facing TLS on the bootstrap and broker listeners; on while
/// cert_file is set. PEM files, re-read on change and on SIGHUP.
struct TlsConfig {
  std::string cert_file;           ///< certificate chain (leaf first)
  std::string key_file;            ///< its private key
  std::string key_password_file;   ///< passphrase of an encrypted key_file ("" : none)
  std::string client_ca_file;      ///< set: client certificates are verified against it
  std::string client_auth = "none";  ///< none | requested | required
  /// A handshake not finished this long after accept closes the connection.
  uint32_t handshake_timeout_ms = 10000;
  /// Who may speak plaintext on the TLS ports: "none", or "loopback"
  /// (127.0.0.0/8 and ::1 peers whose first byte is not a TLS record, for
  /// a sidecar's own pod). Same ports and advertised addresses either way.
  std::string plaintext_clients = "none";
  std::string min_version = "TLSv1.2";             ///< TLSv1.2 | TLSv1.3
  std::string cipher_list = kDefaultTls12Ciphers;  ///< TLS 1.2 suites (OpenSSL cipher list)
  std::string cipher_suites = kDefaultTls13Suites; ///< TLS 1.3 suites (OpenSSL ciphersuites)
  TlsSniConfig sni;
  bool enabled() const { return !cert_file.empty(); }
};

/// TLS on every upstream connection epochgate opens (sessions and the
/// refresher). The dial deadline (limits.upstream_connect_timeout_ms)
/// covers the handshake too.
struct UpstreamTlsConfig {
  bool enabled = false;
  std::string ca_file;            ///< PEM bundle or directory; empty: the system trust store
  std::string cert_file;          ///< client certificate for mTLS ("" : none)
  std::string key_file;
  std::string key_password_file;  ///< passphrase of an encrypted key_file
  /// The broker's certificate must name the host epochgate dialled in a
  /// subjectAltName (RFC 6125; the subject CN is never used).
  bool verify_hostname = true;
  std::string min_version = "TLSv1.2";             ///< TLSv1.2 | TLSv1.3
  std::string cipher_list = kDefaultTls12Ciphers;  ///< TLS 1.2 suites (OpenSSL cipher list)
  std::string cipher_suites = kDefaultTls13Suites; ///< TLS 1.3 suites (OpenSSL ciphersuites)
};

struct LimitsConfig {
  uint32_t max_frame_bytes = 104857600;        ///< Kafka's socket.request.max.bytes
  uint32_t max_in_flight_per_connection = 1000;
  uint32_t max_connections = 10000;            ///< client connections, all listeners
  uint32_t high_watermark_bytes = 4u << 20;    ///< queued bytes that pause the other side
  uint32_t low_watermark_bytes = 1u << 20;     ///< resume below this
  uint32_t idle_timeout_ms = 600000;           ///< close client connections idle this long
  uint32_t partial_frame_timeout_ms = 30000;   ///< a frame started but not finished (client's time)
  /// All connections' buffered bytes; 0: 1 GiB, or half the cgroup memory
  /// limit when that is less (proxy/app/process_limits.h).
  uint64_t buffer_budget_bytes = 0;
  /// Resolve, connect and the broker's answer to epochgate's ApiVersions, per broker.
  uint32_t upstream_connect_timeout_ms = 10000;
  /// A forwarded request unanswered this long past its own deadline (Produce
  /// timeout_ms, Fetch max_wait_ms, else 0) is counted and logged; 0: off.
  uint32_t upstream_overdue_ms = 30000;
  /// Topic and partition entries (every struct array element, and unknown
  /// tagged fields) one request the policy decides on may carry; counted
  /// while it decodes. Bounds a decoded request to about 100 bytes an entry.
  uint32_t max_partitions_per_request = 100000;
  /// A Fetch response at least this large (size prefix, bytes) that needs no
  /// merge, reroute or version bridge is relayed to the client as it arrives
  /// instead of being read whole first; 0: every response is read whole.
  uint32_t stream_fetch_min_bytes = 65536;
  /// Record bytes still to come in a streamed Fetch response's partition
  /// from which they go broker socket to client socket with splice(2)
  /// (plain TCP on both sides), never entering user space; 0: never.
  uint32_t splice_min_bytes = 65536;
  /// Upstream connections per broker node and worker loop dialled and
  /// answered (ApiVersions) before a client needs one; 0: none kept.
  uint32_t warm_upstreams_per_broker = 0;
  /// A kept connection unused this long (ms) is closed and dialled anew.
  uint32_t warm_upstream_max_idle_ms = 60000;
};

struct BrokerPortsConfig {
  std::string bind_host;          ///< empty: the bootstrap listener's host
  uint16_t base = 0;              ///< port of node id n is base + n; 0 = ephemeral (tests)
  std::map<int32_t, uint16_t> map;  ///< explicit ports for sparse node ids
  /// Highest node id expected to use base + id. Validation checks that
  /// base..base+max_node_id fits in 65535 and collides with no other listener;
  /// ids above it need a `map` entry to get a checked port.
  int32_t max_node_id = 255;
  /// Node listeners open at once (bootstrap excluded); a node past it is
  /// refused and not advertised until a listener of a departed node closes.
  uint32_t max_listeners = 1024;
  /// A node's listener closes once the cluster has not named it (in the
  /// refresher's Metadata brokers) for this long.
  uint32_t absent_grace_ms = 300000;
  /// Longest wait between retries of a failed bind (backoff from 250 ms).
  uint32_t bind_retry_max_ms = 5000;
};

struct AdminConfig {
  bool enabled = true;
  HostPort listen{"127.0.0.1", 9644};
  /// Connections at once; a new one past it closes the longest-idle one
  /// (then the oldest busy one), so probes always get a slot.
  uint32_t max_connections = 64;
  /// A keep-alive connection with no request in progress closes after this.
  uint32_t idle_timeout_ms = 5000;
  /// false: /debug/* is answered only to loopback peers (404 otherwise),
  /// so binding the admin port on the pod address exposes probes and
  /// metrics, not the view and config.
  bool expose_debug = false;
};

struct LoggingConfig {
  std::string level = "info";      ///< trace|debug|info|warn|error|critical|off
  std::string format = "text";     ///< text | json
  uint32_t rate_limit_per_sec = 10;  ///< per-fence / per-error lines per second per kind
};

/// The whole configuration. Defaults are what `epochgate` runs with and no file.
struct Config {
  HostPort listen{"127.0.0.1", 9092};     ///< bootstrap listener
  std::string advertise_host;              ///< host in rewritten addresses; empty: listen.host
  std::vector<HostPort> bootstrap_servers;  ///< upstream brokers
  BrokerPortsConfig broker_ports;
  uint32_t workers = 0;                    ///< event-loop threads; 0 = the CPUs the process may use (affinity, cgroup quota)
  uint32_t drain_timeout_ms = 30000;
  AdminConfig admin;
  LimitsConfig limits;
  PolicyConfig policy;
  RefresherConfig refresher;
  RerouteConfig reroute;
  UpstreamSaslConfig upstream_sasl;
  TlsConfig tls;
  UpstreamTlsConfig upstream_tls;
  LoggingConfig logging;
  std::string source_file;                 ///< file it was loaded from, "" if none

  /// Host to put in rewritten broker addresses.
  const std::string& effective_advertise_host() const {
    return advertise_host.empty() ? listen.host : advertise_host;
  }
};

}  // namespace epochgate::config
