// codec/fetch_tail.cc
#include "codec/fetch_tail.h"

#include "codec/writer.h"

namespace epochgate::proxy {

namespace {

size_t uvarint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// The section with the first `keep` endpoints (none at all when `present`
// is false), then `others`, then a padding field of `pad` payload bytes
// when pad >= 0.
std::vector<uint8_t> encode(const std::vector<codec::FetchResponse::NodeEndpoint>* endpoints,
                            size_t keep, bool present, const codec::TaggedFields& others,
                            int16_t version, int64_t pad) {
  std::vector<uint8_t> out;
  codec::Writer w(out);
  uint32_t count = static_cast<uint32_t>(others.size()) + (present ? 1 : 0) + (pad >= 0 ? 1 : 0);
  w.uvarint(count);
  uint32_t last_tag = 0;
  if (present) {
    std::vector<uint8_t> payload;
    codec::Writer pw(payload);
    pw.uvarint(static_cast<uint32_t>(keep + 1));
    for (size_t i = 0; i < keep; ++i) (*endpoints)[i].write(pw, version, true);
    w.uvarint(0);
    w.uvarint(static_cast<uint32_t>(payload.size()));
    w.raw(payload.data(), payload.size());
  }
  for (const auto& t : others) {
    w.uvarint(t.tag);
    w.uvarint(t.data.size);
    w.raw(t.data.data, t.data.size);
    last_tag = t.tag;
  }
  if (pad >= 0) {
    // One past the last tag: no Fetch version defines a top-level tag
    // beyond 0, so every client skips it; zeros carry nothing.
    w.uvarint(last_tag + 1);
    w.uvarint(static_cast<uint32_t>(pad));
    out.insert(out.end(), static_cast<size_t>(pad), 0);
  }
  return out;
}

// Pads `base` (the section without padding, `base_len` bytes, with
// `fields` fields) to `size`: the payload length that makes it exact, or -1.
int64_t pad_for(size_t base_len, uint32_t fields, uint32_t last_tag, size_t size) {
  if (size < base_len) return -1;
  // The count grows by one field; the padding field has a tag, a size, a payload.
  size_t fixed = base_len - uvarint_size(fields) + uvarint_size(fields + 1) +
                 uvarint_size(last_tag + 1);
  if (size < fixed + 1) return -1;
  size_t room = size - fixed;  // = uvarint_size(pad) + pad
  for (size_t len_bytes = 1; len_bytes <= 5 && len_bytes <= room; ++len_bytes) {
    size_t pad = room - len_bytes;
    if (uvarint_size(pad) == len_bytes) return static_cast<int64_t>(pad);
  }
  return -1;
}

}  // namespace

FetchTailFit fit_fetch_tail(
    const std::optional<std::vector<codec::FetchResponse::NodeEndpoint>>& endpoints,
    const codec::TaggedFields& others, int16_t version, size_t size) {
  FetchTailFit fit;
  const auto* eps = endpoints ? &*endpoints : nullptr;
  const size_t n = eps ? eps->size() : 0;
  const uint32_t last_tag = others.empty() ? 0 : others.back().tag;
  // Kafka reads tags as non-negative ints: past the largest, a padding tag
  // would wrap to one already used, so such a tail is only kept as is.
  const bool can_pad = last_tag < 0x7fffffffu;
  // Every endpoint first; then fewer, from the end; last, no NodeEndpoints at all.
  for (size_t option = 0; option <= n + 1; ++option) {
    const bool present = eps != nullptr && option <= n;
    if (eps == nullptr && option > 0) break;
    const size_t keep = present ? n - option : 0;
    std::vector<uint8_t> base = encode(eps, keep, present, others, version, -1);
    const uint32_t fields = static_cast<uint32_t>(others.size()) + (present ? 1 : 0);
    if (base.size() == size) {
      fit.bytes = std::move(base);
    } else {
      int64_t pad = can_pad ? pad_for(base.size(), fields, last_tag, size) : -1;
      if (pad < 0) continue;
      fit.bytes = encode(eps, keep, present, others, version, pad);
      fit.padded = true;
    }
    fit.dropped = n - keep;
    fit.ok = fit.bytes.size() == size;
    if (fit.ok) return fit;
  }
  fit.bytes.clear();
  fit.padded = false;
  fit.dropped = 0;
  return fit;
}

}  // namespace epochgate::proxy
