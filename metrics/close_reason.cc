// metrics/close_reason.cc: the names and kinds of CloseReason, from the one
// list in metrics/close_reason.h.
#include "metrics/close_reason.h"

#include <array>

namespace epochgate::metrics {
namespace {

enum Kind : uint8_t { kClose, kFrame };

struct Row {
  std::string_view name;
  Kind kind;
  bool seeded;
};

constexpr std::array<Row, kCloseReasonCount> kRows = {{
#define EPOCHGATE_CLOSE_REASON_ROW(id, name, kind, seeded) {name, kind, seeded},
    EPOCHGATE_CLOSE_REASONS(EPOCHGATE_CLOSE_REASON_ROW)
#undef EPOCHGATE_CLOSE_REASON_ROW
}};

const Row& row(CloseReason r) { return kRows[static_cast<std::size_t>(r)]; }

}  // namespace

std::string_view close_reason_name(CloseReason r) { return row(r).name; }

bool is_frame_error(CloseReason r) { return row(r).kind == kFrame; }

bool frame_error_seeded(CloseReason r) { return row(r).seeded; }

CloseReason close_reason(codec::Errc e) {
  switch (e) {
    case codec::Errc::kOk: break;
    case codec::Errc::kTruncated: return CloseReason::kTruncated;
    case codec::Errc::kLengthOverflow: return CloseReason::kLengthOverflow;
    case codec::Errc::kBadVarint: return CloseReason::kBadVarint;
    case codec::Errc::kNegativeLength: return CloseReason::kNegativeLength;
    case codec::Errc::kUnexpectedNull: return CloseReason::kUnexpectedNull;
    case codec::Errc::kUnsupportedVersion: return CloseReason::kUnsupportedVersion;
    case codec::Errc::kBadTaggedFields: return CloseReason::kBadTaggedFields;
    case codec::Errc::kFrameTooLarge: return CloseReason::kFrameTooLarge;
    case codec::Errc::kNegativeFrameSize: return CloseReason::kNegativeFrameSize;
    case codec::Errc::kTrailingBytes: return CloseReason::kTrailingBytes;
    case codec::Errc::kTooManyPartitions: return CloseReason::kTooManyPartitions;
  }
  return CloseReason::kMalformedRequest;
}

}  // namespace epochgate::metrics
