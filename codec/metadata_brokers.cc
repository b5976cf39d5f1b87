// codec/metadata_brokers.cc
#include "codec/metadata_brokers.h"

#include "codec/field_io.h"
#include "codec/reader.h"
#include "codec/writer.h"

namespace epochgate::codec {

Status metadata_brokers_span(const uint8_t* body, size_t len, int16_t version, size_t* begin,
                             size_t* end) {
  Reader r(body, len);
  const bool flex = MetadataResponse::is_flexible(version);
  if (version >= 3) {
    r.set_field("ThrottleTimeMs");
    int32_t throttle_time_ms = 0;
    wire::get(r, flex, throttle_time_ms);
  }
  *begin = r.offset();
  r.set_field("Brokers");
  std::vector<MetadataResponse::MetadataResponseBroker> brokers;
  wire::get_array(r, version, flex, brokers);
  *end = r.offset();
  return r.status();
}

void encode_metadata_brokers(const std::vector<MetadataResponse::MetadataResponseBroker>& brokers,
                             int16_t version, std::vector<uint8_t>& out) {
  Writer w(out);
  wire::put_array(w, version, MetadataResponse::is_flexible(version), brokers);
}

}  // namespace epochgate::codec
