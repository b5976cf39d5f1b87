// fuzz/session_rig.h: one real proxy::Session on its own libuv loop, between a
// scripted client and a scripted broker, all on 127.0.0.1 sockets, for the
// session fuzz targets. Owns the loop, the fake client and broker sockets, a
// metadata view preloaded with known topics, PolicyFencing and metrics.
// Must never: touch anything but loopback, leave a handle open (teardown
// aborts unless uv_loop_close() returns 0), or block without a deadline.
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace epochgate::fuzz {

/// How one rig run is set up.
struct RigOptions {
  int32_t node_id = -1;       ///< listener the client "connected to" (-1 bootstrap)
  bool auto_answer = true;    ///< broker answers every forwarded request with a sample response
  bool fencing = true;        ///< wire PolicyFencing (else a pass-through session)
  uint32_t max_in_flight = 8; ///< limits.max_in_flight_per_connection
  uint32_t max_frame_bytes = 1u << 20;
  uint32_t high_watermark = 64u << 10;
  uint32_t low_watermark = 16u << 10;
  /// limits.buffer_budget_bytes: small, so reads pause on it; every byte a
  /// connection reported must be given back once the session is gone.
  uint64_t buffer_budget_bytes = 256u << 10;
  /// The cluster authenticates every client by SASL (epochgate has its own
  /// upstream_sasl, not on behalf of clients): frames before the client's
  /// login are held to the pre-authentication cap.
  bool clients_must_authenticate = false;
};

/// What a run observed (for the targets' oracles).
struct RigStats {
  size_t client_bytes_in = 0;    ///< bytes the client received
  size_t broker_bytes_in = 0;    ///< bytes the broker received (forwarded requests)
  size_t forwarded_frames = 0;   ///< whole request frames the broker received
  bool client_eof = false;       ///< the proxy closed the client connection
  bool broker_eof = false;       ///< the proxy closed the upstream connection
};

class SessionRig {
 public:
  explicit SessionRig(const RigOptions& options);
  /// Closes everything and runs the loop until every handle is closed; aborts
  /// (a finding) if handles stay open or the session is never freed.
  ~SessionRig();
  SessionRig(const SessionRig&) = delete;
  SessionRig& operator=(const SessionRig&) = delete;

  /// False if the session never got both its connections (setup failed).
  bool ready() const { return ready_; }

  /// Bytes the client writes to epochgate, as given (no framing added).
  void client_send(const uint8_t* data, size_t n);
  /// A request frame: 4-byte size prefix, then `payload` (header + body).
  void client_send_frame(const uint8_t* payload, size_t n);
  /// Bytes the broker writes back, as given.
  void broker_send(const uint8_t* data, size_t n);
  /// A response frame to the oldest forwarded request not answered yet:
  /// size prefix, its correlation id, then `rest` (header rest + body).
  /// False when no forwarded request waits for an answer.
  bool broker_answer(const uint8_t* rest, size_t n);
  /// Runs the loop until nothing moves any more (or a deadline).
  void pump();
  /// Wakes sessions paused on the buffer budget if one asked (a worker's
  /// budget timer does this in epochgate).
  void recheck_budget();

  /// The session has not closed itself.
  bool session_alive() const;
  const RigStats& stats() const { return stats_; }

  struct Peer;  // one fake endpoint (client or broker side)

 private:
  struct Forwarded {
    int16_t api_key;
    int16_t api_version;
    int32_t correlation_id;
  };
  static void on_front_connection(uv_stream_t* server, int status);
  static void on_broker_connection(uv_stream_t* server, int status);
  static void on_client_connected(uv_connect_t* req, int status);
  void on_peer_bytes(Peer& p);
  void answer_with_sample(const Forwarded& f);
  void write(Peer& p, std::vector<uint8_t> bytes);
  void run_until(bool (*done)(const SessionRig&), uint64_t budget_ms);

  struct State;
  std::unique_ptr<State> st_;
  RigOptions options_;
  RigStats stats_;
  std::deque<Forwarded> unanswered_;
  uint64_t progress_ = 0;
  bool ready_ = false;
};

}  // namespace epochgate::fuzz
