// proxy/session/api_versions_filter.cc
#include "proxy/session/api_versions_filter.h"

#include <algorithm>

#include "codec/api_table.h"
#include "codec/header.h"
#include "codec/writer.h"

namespace epochgate::proxy {

namespace {
constexpr int16_t kUnsupportedVersion = 35;
}

int cap_api_versions(codec::ApiVersionsResponse& r, bool kip951_bridge) {
  int changed = 0;
  auto& keys = r.api_keys;
  for (auto it = keys.begin(); it != keys.end();) {
    const codec::ApiInfo* info = codec::api_info(it->api_key);
    if (info == nullptr || !info->decoded) {
      ++it;
      continue;
    }
    if (it->min_version > info->max_version) {
      it = keys.erase(it);
      ++changed;
      continue;
    }
    int16_t max = std::min(it->max_version, info->max_version);
    if (kip951_bridge) {
      // Produce v10 = v9 and Fetch v16 = v15 on the request side; only the
      // responses gain hint fields, which epochgate fills from its view.
      if (it->api_key == codec::kProduce && max == 9) max = 10;
      if (it->api_key == codec::kFetch && max == 15) max = 16;
    }
    if (max != it->max_version) {
      it->max_version = max;
      ++changed;
    }
    ++it;
  }
  return changed;
}

std::vector<uint8_t> unsupported_api_versions_response(int32_t correlation_id) {
  const codec::ApiInfo* self = codec::api_info(codec::kApiVersions);
  std::vector<uint8_t> out(4, 0);
  codec::Writer w(out);
  w.int32(correlation_id);           // response header v0
  w.int16(kUnsupportedVersion);      // ErrorCode
  w.int32(1);                        // ApiKeys (v0: int32 count)
  w.int16(codec::kApiVersions);
  w.int16(self ? self->min_version : 0);
  w.int16(self ? self->max_version : 3);
  uint32_t size = static_cast<uint32_t>(out.size() - 4);
  out[0] = static_cast<uint8_t>(size >> 24);
  out[1] = static_cast<uint8_t>(size >> 16);
  out[2] = static_cast<uint8_t>(size >> 8);
  out[3] = static_cast<uint8_t>(size);
  return out;
}

}  // namespace epochgate::proxy
