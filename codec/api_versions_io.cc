// codec/api_versions_io.cc
#include "codec/api_versions_io.h"

#include "codec/message_io.h"

namespace epochgate::codec {

Status decode_api_versions_response(const uint8_t* body, size_t len, int16_t request_version,
                                    ApiVersionsResponse& out, int16_t& used_version) {
  used_version = request_version;
  Status first = decode_body(body, len, request_version, out);
  if (first.ok() || request_version == 0 || len < 2) return first;
  const int16_t error = static_cast<int16_t>((body[0] << 8) | body[1]);
  if (error != kUnsupportedVersionError) return first;
  if (decode_body(body, len, 0, out).ok()) {
    used_version = 0;
    return Status{};
  }
  out = ApiVersionsResponse{};
  (void)decode_body(body, len, request_version, out);  // leave the fields of the first try
  return first;
}

}  // namespace epochgate::codec
