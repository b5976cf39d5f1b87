// proxy/session/request_stream.h: forwards one large Produce request to the
// broker while it is still being read from the client, once its head (every
// field before the last partition's records) was decided "forward as it
// is"; that partition's record bytes then go client socket to broker
// socket with splice(2) (the loop's SplicePipe) in the client's read turns,
// or as read when they cannot. Streams only a request that needs no change:
// plain TCP on both sides, splicing on (limits.splice_min_bytes), no
// write in flight on the broker's connection (a few bytes queued in the
// same turn go first, in the same write), at least limits.splice_min_bytes record bytes
// still to come, no KIP-951 bridge, and a plan that forwards it unchanged
// (no fenced partition, hold, reroute rule or decode error: those are read
// whole as before). The session's upstream connection is its own, so no
// other frame can interleave with a streamed one; a stream cut short
// closes the session, never followed by another frame.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "codec/produce_stream.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/byte_buffer.h"
#include "proxy/net/connection.h"
#include "proxy/session/request_path.h"
#include "proxy/session/session_host.h"

namespace epochgate::proxy {

/// One session's streamed request, if any (loop thread only).
class RequestStream {
 public:
  RequestStream(WorkerContext& ctx, Connection& client, RequestPath& requests, SessionHost& host);

  /// Room for the first read after a streamed request, in bytes: the next
  /// frame's head (a Produce's fields before its records take about
  /// 100-300 bytes) rather than a pool block, most of which would be
  /// record bytes copied that a splice could move.
  static constexpr size_t kHeadReadBytes = Connection::kFieldsReadBytes;

  /// The upstream connection the request goes to, once it is open.
  void attach_upstream(Connection& upstream) { upstream_ = &upstream; }

  /// The frame at the head of `in` (`frame_size` bytes with its size
  /// prefix, codec::FrameScan's kNeedMore size; not all of them arrived)
  /// streams when it qualifies: then it was decided and owed, its head and
  /// what arrived of its records went upstream, and true is returned.
  /// False: read it whole as any other request (nothing was done), or the
  /// session closed (a malformed head: `closed()`).
  bool try_begin(ByteBuffer& in, size_t frame_size);
  bool active() const { return parser_.has_value(); }
  /// The session closed in try_begin() (its head was malformed).
  bool closed() const { return closed_; }
  /// Payload bytes of the streamed frame still to arrive or be parsed.
  size_t left() const { return parser_ ? parser_->left() : 0; }

  enum class Step { kMore, kDone, kClosed };
  /// Forwards what `in` holds of the streamed frame, consuming it. kMore:
  /// the frame goes on; kDone: it ended (its answer is owed as for any
  /// forwarded request); kClosed: it was malformed and the session closed.
  Step relay(ByteBuffer& in);
  /// No byte of the streamed frame is left to arrive (its records were
  /// spliced to the end): relay() with no input finishes it.
  bool complete() const { return parser_ && parser_->left() == 0; }

  /// The client's socket is readable and its input holds no unread byte
  /// (ConnectionOwner::take_read_turn()): while the last partition's
  /// records have at least kTailSpliceBytes to come and the broker's
  /// connection has nothing queued, moves them socket to socket and returns
  /// the bytes moved, UV_EAGAIN (none were there) or the client's uv error;
  /// 0: not taken, read as usual. What the broker's socket does not take is
  /// queued to it (a copy).
  ssize_t take_read_turn();
  /// The streamed request's records are to be spliced (at least
  /// kTailSpliceBytes of them to come, both sockets plain TCP): a
  /// read of the client's socket now would copy what a splice could move
  /// once the broker's connection has nothing queued.
  bool splicing() const;
  /// The last try_begin() declined a large Produce only because the
  /// broker's connection had a write in flight (or more than
  /// kQueuedBeforeHeadBytes queued): it would stream once they
  /// are written, with at least limits.splice_min_bytes still to come.
  bool waits_for_upstream() const { return waits_for_upstream_; }
  /// Forgets waits_for_upstream() (the session is about to read its input anew).
  void forget_wait() { waits_for_upstream_ = false; }
  /// A write error the broker's socket gave a splice (0: none), cleared.
  int take_splice_error() {
    int e = splice_error_;
    splice_error_ = 0;
    return e;
  }

 private:
  /// Both sockets plain TCP and splicing on.
  bool may_splice() const;
  bool fail(const std::string& detail);

  WorkerContext& ctx_;
  Connection& client_;
  Connection* upstream_ = nullptr;
  RequestPath& requests_;
  SessionHost& host_;
  std::optional<ProduceStreamParser> parser_;
  int splice_error_ = 0;  // the broker's, from a splice inside the read callback
  bool closed_ = false;
  /// Once a request streams, its records are spliced down to this many
  /// (limits.splice_min_bytes decides only whether it streams): a splice
  /// pair costs what a read and a write cost, without the two copies, and
  /// below a page the copies are cheaper than the pipe's bookkeeping.
  static constexpr uint64_t kTailSpliceBytes = 4096;
  bool waits_for_upstream_ = false;  // see waits_for_upstream()
  /// Most bytes queued to the broker in the same turn (none being written)
  /// that a streamed head may follow: a previous run's tail and fields
  /// (under kTailSpliceBytes plus a few) and small frames, which are
  /// copied into the queue anyway; larger ones are written first.
  static constexpr size_t kQueuedBeforeHeadBytes = Connection::kWriteThroughBytes;
  /// Longest head (everything before the last partition's records, the
  /// other partitions' records included) parsed and copied for the
  /// decision, in bytes; a longer one is read whole.
  static constexpr size_t kMaxHeadBytes = 64 * 1024;
  // The head of the frame still arriving, parsed so far, and which frame it is.
  std::optional<ProduceStreamParser> head_;
  size_t head_parsed_ = 0;
  int32_t head_corr_ = 0;
  size_t head_frame_ = 0;
  // The last frame forward_head() declined (read whole): its correlation id and size.
  int32_t declined_corr_ = 0;
  size_t declined_size_ = 0;
};

}  // namespace epochgate::proxy
