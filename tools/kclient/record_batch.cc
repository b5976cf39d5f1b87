// tools/kclient/record_batch.cc
#include "record_batch.h"

#include <array>

namespace epochgate::tools {

namespace {
std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

void be(std::vector<uint8_t>& out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// Signed varint with zig-zag encoding (the record format's varint).
void varint(std::vector<uint8_t>& out, int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<uint8_t>(z | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<uint8_t>(z));
}
}  // namespace

uint32_t crc32c(const uint8_t* data, size_t n) {
  static const std::array<uint32_t, 256> table = make_table();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::vector<uint8_t> one_record_batch(std::string_view value, int64_t timestamp_ms) {
  std::vector<uint8_t> record;
  record.push_back(0);  // attributes
  varint(record, 0);    // timestamp delta
  varint(record, 0);    // offset delta
  varint(record, -1);   // null key
  varint(record, static_cast<int64_t>(value.size()));
  record.insert(record.end(), value.begin(), value.end());
  varint(record, 0);  // no headers

  std::vector<uint8_t> after_crc;  // attributes .. records: what the CRC covers
  be(after_crc, 0, 2);             // attributes: no compression, create time
  be(after_crc, 0, 4);             // last offset delta
  be(after_crc, static_cast<uint64_t>(timestamp_ms), 8);
  be(after_crc, static_cast<uint64_t>(timestamp_ms), 8);
  be(after_crc, static_cast<uint64_t>(-1), 8);  // producer id
  be(after_crc, static_cast<uint16_t>(-1), 2);  // producer epoch
  be(after_crc, static_cast<uint32_t>(-1), 4);  // base sequence
  be(after_crc, 1, 4);                          // record count
  varint(after_crc, static_cast<int64_t>(record.size()));
  after_crc.insert(after_crc.end(), record.begin(), record.end());

  std::vector<uint8_t> batch;
  be(batch, 0, 8);  // base offset
  be(batch, 4 + 1 + 4 + after_crc.size(), 4);  // length after this field
  be(batch, static_cast<uint32_t>(-1), 4);     // partition leader epoch
  batch.push_back(2);                          // magic
  be(batch, crc32c(after_crc.data(), after_crc.size()), 4);
  batch.insert(batch.end(), after_crc.begin(), after_crc.end());
  return batch;
}

}  // namespace epochgate::tools
