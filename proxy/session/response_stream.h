// proxy/session/response_stream.h: relays one large Fetch response from the
// upstream input to the client as its bytes arrive, instead of reading it
// whole first (store and forward costs a whole frame of latency and memory).
// Streams only a response that needs no change but its NodeEndpoints: Fetch,
// its request the oldest the client is owed (so client order holds), no
// split or served probe (no policy context), no reroute, no version bridge.
// Learns from every partition once the response ends (errors, CurrentLeader,
// NodeEndpoints). The size prefix goes out first, so the v16+ NodeEndpoints
// tail is rewritten to the broker's length (codec/fetch_tail.h). The view's
// hint backfill does not apply: a partition's tagged fields follow its
// records, already sent; the client gets the broker's answer as it would
// directly, and the skipped hint is counted. Never lets an upstream address
// reach the client; a malformed response closes the session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "codec/fetch_stream.h"
#include "proxy/core/in_flight_queue.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/byte_buffer.h"
#include "proxy/net/connection.h"
#include "proxy/session/session_host.h"

namespace epochgate::proxy {

/// Records epochgate's own share of a request's latency
/// (epochgate_proxy_latency_seconds) when its response is written.
void record_proxy_latency(WorkerContext& ctx, const InFlightRequest& e);

/// One session's streamed response, if any (loop thread only).
class ResponseStream {
 public:
  ResponseStream(WorkerContext& ctx, int32_t node_id, Connection& client, InFlightQueue& in_flight,
                 const std::string& upstream_name, SessionHost& host);

  /// The frame at the head of `in` (`frame_size` bytes with its size
  /// prefix, codec::FrameScan's kNeedMore size; not all of them arrived)
  /// streams when it qualifies: then its request is matched, the size
  /// prefix goes to the client and true is returned. False: read it whole as
  /// any other response.
  bool try_begin(ByteBuffer& in, size_t frame_size);
  bool active() const { return parser_.has_value(); }
  /// Payload bytes of the streamed frame still to arrive or be parsed.
  size_t left() const { return parser_ ? parser_->left() : 0; }
  /// The request whose response streams, or nullptr: its broker still owes
  /// the rest of the frame, so it is watched like an unanswered request.
  InFlightRequest* request() const { return parser_ ? request_ : nullptr; }
  /// Bytes of the streamed frame with its size prefix (0 when none streams).
  size_t frame_bytes() const { return parser_ ? frame_bytes_ : 0; }

  enum class Step { kMore, kDone, kClosed };
  /// Relays what `in` holds of the streamed frame, consuming it. kMore: the
  /// frame goes on; kDone: it ended and its request was popped; kClosed: it
  /// was malformed and the session closed.
  Step relay(ByteBuffer& in);

 private:
  /// The tail (top-level tagged fields, then any trailing bytes) at `p`:
  /// learns, rewrites NodeEndpoints to the same length, writes it.
  bool finish(const uint8_t* p, size_t n);
  bool fail(CloseReason reason, const std::string& detail);

  WorkerContext& ctx_;
  int32_t node_id_;
  Connection& client_;
  InFlightQueue& in_flight_;
  const std::string& upstream_name_;
  SessionHost& host_;
  std::optional<FetchStreamParser> parser_;
  InFlightRequest* request_ = nullptr;
  size_t frame_bytes_ = 0;
};

}  // namespace epochgate::proxy
