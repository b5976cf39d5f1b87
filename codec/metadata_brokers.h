// codec/metadata_brokers.h: the Brokers array of a MetadataResponse body as
// a byte range (MetadataResponse.json: ThrottleTimeMs v3+, then Brokers), so
// that a response whose only change is its broker addresses can go out as
// the broker's own bytes around a re-encoded Brokers array, instead of a
// re-encoding of every topic and partition. No I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codec/messages/metadata_response.h"
#include "codec/status.h"

namespace epochgate::codec {

/// Finds the Brokers array (its length prefix included) in a MetadataResponse
/// body of `version` (the bytes after the response header): on success,
/// [*begin, *end) are its byte offsets in `body`. Errors: the body ends or a
/// length is invalid before the array does (the Status names the field).
Status metadata_brokers_span(const uint8_t* body, size_t len, int16_t version, size_t* begin,
                             size_t* end);

/// Appends `brokers` to `out`, encoded as the Brokers array of a
/// MetadataResponse of `version` (the same bytes metadata_brokers_span
/// delimits).
void encode_metadata_brokers(const std::vector<MetadataResponse::MetadataResponseBroker>& brokers,
                             int16_t version, std::vector<uint8_t>& out);

}  // namespace epochgate::codec
