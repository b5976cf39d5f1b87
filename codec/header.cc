// codec/header.cc
#include "codec/header.h"

#include "codec/api_table.h"
#include "codec/reader.h"
#include "codec/writer.h"

namespace epochgate::codec {
namespace {

Status read_tagged(Reader& r, TaggedFields& out) {
  uint32_t n = r.tagged_count();
  int64_t prev = -1;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    uint32_t tag = 0, size = 0;
    if (!r.tag_header(prev, tag, size)) break;
    out.push_back(TaggedField{tag, r.raw(size)});
    prev = tag;
  }
  return r.status();
}

void write_tagged(Writer& w, const TaggedFields& fields) {
  w.uvarint(static_cast<uint32_t>(fields.size()));
  for (const auto& f : fields) {
    w.uvarint(f.tag);
    w.uvarint(f.data.size);
    w.raw(f.data.data, f.data.size);
  }
}

}  // namespace

bool peek_request_ids(const uint8_t* frame, size_t len, int16_t& api_key, int16_t& api_version,
                      int32_t& correlation_id) {
  if (len < 8) return false;
  Reader r(frame, 8);
  api_key = r.int16();
  api_version = r.int16();
  correlation_id = r.int32();
  return true;
}

Status parse_request_header(const uint8_t* frame, size_t len, RequestHeader& out) {
  Reader r(frame, len);
  r.set_field("RequestHeader");
  out.api_key = r.int16();
  out.api_version = r.int16();
  out.correlation_id = r.int32();
  out.tagged_fields.clear();
  if (!r.ok()) return r.status();
  out.header_version = request_header_version(out.api_key, out.api_version);
  out.client_id.reset();
  if (out.header_version >= 1) {
    // client_id stays a non-compact nullable string even in header v2.
    int16_t n = r.int16();
    if (r.ok()) {
      if (n == -1) {
        out.client_id.reset();
      } else if (n < 0) {
        r.fail(Errc::kNegativeLength, "ClientId");
      } else if (static_cast<size_t>(n) > r.remaining()) {
        r.fail(Errc::kLengthOverflow, "ClientId");
      } else {
        out.client_id = std::string_view(reinterpret_cast<const char*>(r.position()), n);
        r.skip(n);
      }
    }
  }
  if (!r.ok()) return r.status();
  if (out.header_version >= 2) read_tagged(r, out.tagged_fields);
  out.size = r.offset();
  return r.status();
}

void write_request_header(std::vector<uint8_t>& out, const RequestHeader& h) {
  Writer w(out);
  w.int16(h.api_key);
  w.int16(h.api_version);
  w.int32(h.correlation_id);
  if (h.header_version >= 1) {
    if (h.client_id) {
      w.int16(static_cast<int16_t>(h.client_id->size()));
      w.raw(h.client_id->data(), h.client_id->size());
    } else {
      w.int16(-1);
    }
  }
  if (h.header_version >= 2) write_tagged(w, h.tagged_fields);
}

Status parse_response_header(const uint8_t* frame, size_t len, int header_version,
                             ResponseHeader& out) {
  Reader r(frame, len);
  r.set_field("ResponseHeader");
  out.correlation_id = r.int32();
  out.header_version = header_version;
  out.tagged_fields.clear();
  if (header_version >= 1 && r.ok()) read_tagged(r, out.tagged_fields);
  out.size = r.offset();
  return r.status();
}

void write_response_header(std::vector<uint8_t>& out, const ResponseHeader& h) {
  Writer w(out);
  w.int32(h.correlation_id);
  if (h.header_version >= 1) write_tagged(w, h.tagged_fields);
}

}  // namespace epochgate::codec
