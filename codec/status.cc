// codec/status.cc: names and messages for decode errors.
#include "codec/status.h"

namespace epochgate::codec {

const char* errc_name(Errc e) {
  switch (e) {
    case Errc::kOk: return "ok";
    case Errc::kTruncated: return "truncated";
    case Errc::kLengthOverflow: return "length_overflow";
    case Errc::kBadVarint: return "bad_varint";
    case Errc::kNegativeLength: return "negative_length";
    case Errc::kUnexpectedNull: return "unexpected_null";
    case Errc::kUnsupportedVersion: return "unsupported_version";
    case Errc::kBadTaggedFields: return "bad_tagged_fields";
    case Errc::kFrameTooLarge: return "frame_too_large";
    case Errc::kNegativeFrameSize: return "negative_frame_size";
    case Errc::kTrailingBytes: return "trailing_bytes";
    case Errc::kTooManyPartitions: return "too_many_partitions";
  }
  return "unknown";
}

std::string Status::message() const {
  std::string m = errc_name(code);
  m += " at byte ";
  m += std::to_string(offset);
  if (field != nullptr && field[0] != '\0') {
    m += " (field ";
    m += field;
    m += ")";
  }
  return m;
}

}  // namespace epochgate::codec
