// codec/header.h: Kafka request and response headers (RequestHeader v1/v2,
// ResponseHeader v0/v1; docs/architecture.md section 4). The client id is a view into the
// frame; nothing is copied.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "codec/status.h"
#include "codec/types.h"

namespace epochgate::codec {

/// API keys the proxy and policy refer to by name.
enum ApiKey : int16_t {
  kProduce = 0,
  kFetch = 1,
  kListOffsets = 2,
  kMetadata = 3,
  kFindCoordinator = 10,
  kSaslHandshake = 17,
  kApiVersions = 18,
  kOffsetForLeaderEpoch = 23,
  kSaslAuthenticate = 36,
  kDescribeCluster = 60,
  kShareFetch = 78,
  kShareAcknowledge = 79,
  kInitializeShareGroupState = 83,
  kReadShareGroupState = 84,
  kWriteShareGroupState = 85,
  kDeleteShareGroupState = 86,
  kReadShareGroupStateSummary = 87,
};

/// A parsed request header. `size` is the header's length in bytes, so the
/// body starts at frame + size.
struct RequestHeader {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string_view> client_id;  ///< null when the wire says -1
  TaggedFields tagged_fields;                 ///< header v2 only
  int header_version = 1;
  size_t size = 0;
};

/// Parses the header at the start of a request frame payload (size prefix
/// already stripped). Picks v1 or v2 from the API table. A key outside the
/// table is parsed as v1 (its body is never decoded).
Status parse_request_header(const uint8_t* frame, size_t len, RequestHeader& out);

/// Reads only api key, version and correlation id (the first 8 bytes); false if
/// the frame is shorter than that. Enough to frame and match any API.
bool peek_request_ids(const uint8_t* frame, size_t len, int16_t& api_key, int16_t& api_version,
                      int32_t& correlation_id);

/// Appends a request header of `h.header_version` (1 or 2).
void write_request_header(std::vector<uint8_t>& out, const RequestHeader& h);

/// A parsed response header.
struct ResponseHeader {
  int32_t correlation_id = 0;
  TaggedFields tagged_fields;  ///< header v1 only
  int header_version = 0;
  size_t size = 0;
};

/// Parses a response header of the given version (0 or 1) from a frame payload.
Status parse_response_header(const uint8_t* frame, size_t len, int header_version,
                             ResponseHeader& out);

/// Appends a response header of `h.header_version` (0 or 1).
void write_response_header(std::vector<uint8_t>& out, const ResponseHeader& h);

}  // namespace epochgate::codec
