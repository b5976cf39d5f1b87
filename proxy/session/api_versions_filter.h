// proxy/session/api_versions_filter.h: ApiVersions handling. The
// advertised max version of every API the codec decodes is capped at the
// codec's own max, so a client never speaks a version epochgate cannot read;
// APIs it does not decode pass through unchanged.
#pragma once

#include <cstdint>
#include <vector>

#include "codec/messages/api_versions_response.h"

namespace epochgate::proxy {

/// Caps decoded APIs' max versions in `r`; drops a decoded API whose broker
/// minimum is above the codec's maximum. With `kip951_bridge`, a broker that
/// stops at Produce v9 / Fetch v15 is offered to clients at v10 / v16 (the
/// request layouts are identical; the session downgrades and adds hints).
/// Returns the number of entries changed.
int cap_api_versions(codec::ApiVersionsResponse& r, bool kip951_bridge);

/// The answer a broker gives to an ApiVersions request newer than it knows:
/// UNSUPPORTED_VERSION with epochgate's ApiVersions range, encoded as response
/// v0 behind a v0 header (size prefix included), so the client retries lower.
std::vector<uint8_t> unsupported_api_versions_response(int32_t correlation_id);

}  // namespace epochgate::proxy
