// proxy/session/partial_frame_clock.h: how long a client has kept a request
// frame incomplete, for limits.partial_frame_timeout_ms. Time in which
// epochgate itself did not read the client for the broker's sake does not
// count: that wait is the broker's, and closing the client for it would
// blame (and count as a frame error) a client that was sending.
#pragma once

#include <algorithm>
#include <cstdint>

namespace epochgate::proxy {

/// The clock of one client connection's frame in progress. Times are
/// now_ns() values (ns). Session marks where a frame starts and ends;
/// FlowControl marks where it holds the client's reads for the broker (its
/// output queue over the high watermark, or a streamed Produce's records
/// waiting for that queue to be written).
///
/// Time held by the buffer budget counts: a partial frame holds memory every
/// client shares, and the timeout is what returns it when the clients that
/// hold it stop sending (otherwise a budget full of partial frames would
/// pause every client for good).
class PartialFrameClock {
 public:
  /// The first bytes of an incomplete frame were read (no-op while one is timed).
  void frame_started(uint64_t now_ns) {
    if (started_ns_ != 0) return;
    started_ns_ = now_ns;
    held_ns_ = 0;
  }
  /// A frame is being timed (frame_started() and no frame_done() since).
  bool timing() const { return started_ns_ != 0; }
  /// The frame completed, or nothing of one is pending.
  void frame_done() { started_ns_ = 0; }
  /// Reads of the client stopped for the broker's sake (no-op while held).
  void hold(uint64_t now_ns) {
    if (held_since_ns_ == 0) held_since_ns_ = now_ns;
  }
  /// Reads of the client resumed, or stopped for another reason.
  void release(uint64_t now_ns) {
    if (held_since_ns_ == 0) return;
    if (started_ns_ != 0) held_ns_ += now_ns - std::max(held_since_ns_, started_ns_);
    held_since_ns_ = 0;
  }
  bool held() const { return held_since_ns_ != 0; }
  /// A frame has been incomplete for more than `limit_ns` of the client's
  /// own time (never while held).
  bool stalled(uint64_t now_ns, uint64_t limit_ns) const {
    if (started_ns_ == 0 || held_since_ns_ != 0) return false;
    const uint64_t run = now_ns - started_ns_;
    return run > held_ns_ && run - held_ns_ > limit_ns;
  }

 private:
  uint64_t started_ns_ = 0;     // 0: no frame pending
  uint64_t held_ns_ = 0;        // held time since started_ns_, over finished holds
  uint64_t held_since_ns_ = 0;  // 0: not held now
};

}  // namespace epochgate::proxy
