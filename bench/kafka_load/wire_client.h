// bench/kafka_load: a blocking raw-socket Kafka client for the ping-pong
// latency probe (one small request at a time) and for holding many idle
// connections. Speaks only ApiVersions v2, Metadata v4 (request header v1)
// and an all-topics Metadata v12 (request header v2); never parses more of a response than its size
// and correlation id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "latency_samples.h"

namespace epochgate::bench {

/// One TCP connection to a Kafka listener (loopback).
class WireClient {
 public:
  WireClient() = default;
  ~WireClient();
  WireClient(WireClient&& other) noexcept
      : fd_(other.fd_), next_corr_(other.next_corr_), expect_corr_(other.expect_corr_) {
    other.fd_ = -1;
  }
  WireClient(const WireClient&) = delete;
  WireClient& operator=(const WireClient&) = delete;

  /// Connects (TCP_NODELAY, 5 s receive timeout). False on failure.
  bool connect(const std::string& host, int port);
  /// Sends ApiVersions v2 (no body). False on a socket error.
  bool send_api_versions();
  /// Sends Metadata v4 for one topic, no auto-creation.
  bool send_metadata(const std::string& topic);
  /// Sends Metadata v12 (flexible, request header v2) for all topics (null
  /// topic array), as librdkafka 2.15 asks a broker for the whole cluster.
  bool send_metadata_all_v12();
  /// Sends Metadata v12 for the named topics (by name, zero topic ids).
  bool send_metadata_v12(const std::vector<std::string>& topics);
  /// Reads one whole response; false on error, timeout or a correlation id
  /// other than the oldest request's.
  bool read_response();
  /// Size field of the last response read (bytes after the 4-byte size).
  size_t last_response_bytes() const { return last_response_bytes_; }
  void close();

 private:
  bool send_frame(int16_t api_key, int16_t version, const std::vector<uint8_t>& body,
                  bool flexible_header = false);
  bool read_exact(uint8_t* out, size_t n);
  int fd_ = -1;
  int32_t next_corr_ = 1;
  int32_t expect_corr_ = 1;
  std::vector<uint8_t> scratch_;
  size_t last_response_bytes_ = 0;
};

/// What a ping-pong probe sends.
enum class ProbeRequest { kApiVersions, kMetadata };

/// One target of an interleaved ping-pong: a connection and its samples.
struct PingTarget {
  std::string host;
  int port = 0;
  LatencySamples* out = nullptr;  ///< round-trip times, µs
  bool failed = false;
};

/// Sequential round trips of `req`, one connection per target, interleaved:
/// one round trip on each target in turn (order rotated every pass), so a
/// burst of machine noise falls on every target alike. `warmup` unmeasured
/// passes, then `count` measured ones. False when any target failed.
bool ping_pong_interleaved(std::vector<PingTarget>& targets, ProbeRequest req,
                           const std::string& topic, int warmup, int count);

/// Opens `count` connections to host:port one after another, each sending
/// ApiVersions once and reading its answer, and keeps them open in `out`.
/// Returns how many worked.
int open_idle_connections(const std::string& host, int port, int count,
                          std::vector<WireClient>& out);

}  // namespace epochgate::bench
