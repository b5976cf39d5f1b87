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

  /// The upstream socket is readable and `upstream` holds no unread byte
  /// (ConnectionOwner::take_read_turn()): while the stream is inside a
  /// partition's Records with at least `limits.splice_min_bytes` of them to
  /// come and the client has nothing queued, moves them socket to socket
  /// (the loop's SplicePipe) and returns the bytes moved, UV_EAGAIN (none
  /// were there) or the upstream's uv error; 0: not taken, read as usual.
  /// What the client's socket does not take is queued to it (a copy).
  ssize_t take_read_turn(Connection& upstream);
  /// A write error the client's socket gave a splice (0: none), cleared.
  int take_splice_error() {
    int e = splice_error_;
    splice_error_ = 0;
    return e;
  }
  /// Bytes the next ordinary read of the upstream should take at most while
  /// this response streams: Connection::kMaxReadBytes, except where the
  /// next Records run could be spliced: between two runs
  /// (kSpliceFieldsReadBytes) and before the last bytes of a run, fewer than
  /// limits.splice_min_bytes, that a splice left (those and
  /// kSpliceFieldsReadBytes): a large read there would copy the next
  /// partition's records that a splice could have moved.
  size_t next_read_bytes(const Connection& upstream) const;
  /// What such a read between Records takes: a partition's fields (about
  /// 60-100 bytes, more with aborted transactions) and the next one's header
  /// with room to spare, so reading them costs one read, not one per field;
  /// the rest of the read is the next partition's records, copied where a
  /// splice could have moved them (16 KiB copied about 12% of a 1 KiB-record
  /// consumer's bytes, bench/PROFILE.md).
  static constexpr size_t kSpliceFieldsReadBytes = Connection::kFieldsReadBytes;

  /// What the first read of the next response should take at most
  /// (Connection::set_first_read_bytes()): kSpliceFieldsReadBytes while the
  /// last response was a streamed Fetch whose records were spliced and
  /// splicing is possible, so the next one's records are not copied up to
  /// a pool block (64 KiB) before it is known to stream; 0 (a pool block)
  /// otherwise. A small response then still fits that read; one between it
  /// and a pool block costs a second read in the same loop turn.
  size_t first_read_bytes(const Connection& upstream) const;
  /// A response was read whole (not streamed): the next one is not
  /// expected to splice.
  void whole_response_read() { last_spliced_ = false; }

  /// The streamed frame has no byte left to arrive (its records were spliced
  /// to the end): relay() with no input finishes it.
  bool complete() const { return parser_ && parser_->left() == 0; }

 private:
  /// The tail (top-level tagged fields, then any trailing bytes) at `p`:
  /// learns, rewrites NodeEndpoints to the same length, writes it.
  bool finish(const uint8_t* p, size_t n);
  bool fail(CloseReason reason, const std::string& detail);

  /// A streamed response's bytes could be spliced at all: plain TCP on both
  /// sides and splicing on (limits.splice_min_bytes > 0).
  bool may_splice(const Connection& upstream) const;
  /// The same for any response of this session, streamed or not.
  bool could_splice(const Connection& upstream) const;

  WorkerContext& ctx_;
  int32_t node_id_;
  Connection& client_;
  InFlightQueue& in_flight_;
  const std::string& upstream_name_;
  SessionHost& host_;
  std::optional<FetchStreamParser> parser_;
  InFlightRequest* request_ = nullptr;
  size_t frame_bytes_ = 0;
  int splice_error_ = 0;  // the client's, from a splice inside the read callback
  bool spliced_ = false;       // the streamed frame had record bytes spliced
  bool last_spliced_ = false;  // so had the last response, which streamed
};

}  // namespace epochgate::proxy
