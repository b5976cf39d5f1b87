// codec/status.h: the result of every decode. The codec never throws on the
// data path and never aborts: malformed input becomes a Status carrying what
// went wrong and where, and the caller (a session) closes that one connection.
#pragma once

#include <cstdint>
#include <string>

namespace epochgate::codec {

/// Why a decode failed. Names are stable: they are used as metric label values
/// (`epochgate_frame_errors_total{reason}`), so the set is bounded.
enum class Errc : uint8_t {
  kOk = 0,
  kTruncated,           ///< fewer bytes left than the field needs
  kLengthOverflow,      ///< a length or array count larger than the bytes left
  kBadVarint,           ///< a varint longer than its type allows
  kNegativeLength,      ///< a negative length other than -1 (null)
  kUnexpectedNull,      ///< null in a version where the field is not nullable
  kUnsupportedVersion,  ///< the API version is outside what the codec knows
  kBadTaggedFields,     ///< tags not strictly ascending, or a tag's size overruns
  kFrameTooLarge,       ///< frame size above the configured maximum
  kNegativeFrameSize,   ///< frame size prefix below zero
  kTrailingBytes,       ///< bytes left in the frame after the message ended
  kTooManyPartitions,   ///< more topic/partition entries than the decode may build
};

/// Stable snake_case name of an error code, e.g. "truncated".
const char* errc_name(Errc e);

/// Outcome of a decode: ok, or the error, the byte offset in the input where
/// it was detected and the schema field being read (static string, may be "").
struct Status {
  Errc code = Errc::kOk;
  uint32_t offset = 0;
  const char* field = "";

  bool ok() const { return code == Errc::kOk; }
  /// Human-readable description for log lines: "truncated at byte 17 (field Topics)".
  std::string message() const;
};

}  // namespace epochgate::codec
