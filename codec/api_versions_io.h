// codec/api_versions_io.h: decoding ApiVersions responses the way Kafka
// clients do. A broker that does not support the request's ApiVersions
// version answers with a version 0 body carrying UNSUPPORTED_VERSION (35) and
// its supported range for ApiVersions (KIP-511), so a response is not always
// in the version of its request. Must never: throw, or guess beyond that rule.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/messages/api_versions_response.h"
#include "codec/status.h"

namespace epochgate::codec {

/// Kafka error code UNSUPPORTED_VERSION.
inline constexpr int16_t kUnsupportedVersionError = 35;

/// Decodes an ApiVersions response body sent in answer to a request of
/// `request_version`. If it does not decode exactly in that version and its
/// first two bytes are error 35, decodes it as version 0 instead (Kafka's
/// Java client does the same). `used_version` is the version that decoded.
/// Errors: the error of the request's version when neither decodes.
Status decode_api_versions_response(const uint8_t* body, size_t len, int16_t request_version,
                                    ApiVersionsResponse& out, int16_t& used_version);

}  // namespace epochgate::codec
