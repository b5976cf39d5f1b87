// codec/frame_splitter.h: splits a Kafka byte stream into frames (a 4-byte
// big-endian size, then that many bytes). Works whether bytes arrive one at a
// time or many frames per read. Never allocates more than the size prefix
// allows, and only after that prefix passed the configured maximum.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/status.h"

namespace epochgate::codec {

/// Kafka's socket.request.max.bytes default: 100 MiB.
inline constexpr uint32_t kDefaultMaxFrameSize = 104857600;

/// What the next bytes of a stream hold.
struct FrameScan {
  enum class Kind { kNeedMore, kFrame, kError };
  Kind kind = Kind::kNeedMore;
  /// kFrame: frame payload size in bytes (without the 4-byte prefix).
  /// kNeedMore: total bytes needed from the start of the buffer to make
  /// progress (4 until the prefix is in, then 4 + size).
  size_t size = 4;
  Errc error = Errc::kOk;  ///< kError: kNegativeFrameSize or kFrameTooLarge
};

/// Looks at the first bytes of `data` (len bytes, not yet consumed) and says
/// whether a whole frame is there. Stateless: call again with more bytes.
FrameScan scan_frame(const uint8_t* data, size_t len, uint32_t max_frame_size);

/// Resumable splitter that keeps its own copy of a partial frame, for callers
/// that do not own an accumulation buffer (fuzzers, tests, tools).
/// feed() consumes bytes until one frame is complete; frame() then returns its
/// payload until next() is called.
class FrameSplitter {
 public:
  explicit FrameSplitter(uint32_t max_frame_size = kDefaultMaxFrameSize)
      : max_frame_size_(max_frame_size) {}

  /// Consumes up to `len` bytes; returns how many were taken. Stops after a
  /// frame is complete (ready() true) or on error (failed() true).
  size_t feed(const uint8_t* data, size_t len);
  bool ready() const { return ready_; }
  bool failed() const { return error_ != Errc::kOk; }
  Errc error() const { return error_; }
  /// Payload of the completed frame (size prefix stripped).
  const std::vector<uint8_t>& frame() const { return payload_; }
  /// Drops the completed frame and starts on the next one.
  void next();

 private:
  uint32_t max_frame_size_;
  uint8_t prefix_[4] = {};
  size_t prefix_have_ = 0;
  size_t want_ = 0;
  std::vector<uint8_t> payload_;
  bool ready_ = false;
  Errc error_ = Errc::kOk;
};

}  // namespace epochgate::codec
