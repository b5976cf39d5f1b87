// tools/kclient/record_batch.h: builds one uncompressed Kafka record batch
// (magic 2, KIP-98 format: one record, no key, no headers, no producer id)
// with its CRC-32C (RFC 3720 polynomial), for the epochgate-kclient test
// tool's Produce requests. Test tooling only; never linked into epochgate.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace epochgate::tools {

/// CRC-32C (Castagnoli) of [data, data+n), as record batches carry it.
uint32_t crc32c(const uint8_t* data, size_t n);

/// A batch of one record holding `value`, timestamp `timestamp_ms`.
std::vector<uint8_t> one_record_batch(std::string_view value, int64_t timestamp_ms);

}  // namespace epochgate::tools
