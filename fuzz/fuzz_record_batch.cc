// fuzz/fuzz_record_batch.cc: libFuzzer target for the RecordBatch v2 header
// reader (codec/record_batch.h). Oracles: it never reads outside the input
// (ASan), an accepted batch fits the input and has a record count that
// matches its offset range, and the answer for the first batch alone is the
// same header (what follows it cannot change how it reads).
//
// Input: the records bytes of one Produce partition.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "codec/record_batch.h"

namespace ec = epochgate::codec;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy of exactly `size` bytes so that any overread hits the redzone.
  std::vector<uint8_t> in(data, data + size);
  ec::RecordBatchInfo info = ec::read_record_batch_header(in.data(), in.size());
  if (!info.ok()) return 0;
  const ec::RecordBatchHeader& h = info.first;
  if (h.size() > size || info.batch_count < 1) std::abort();
  if (h.record_count <= 0 || static_cast<int64_t>(h.last_offset_delta) + 1 != h.record_count) {
    std::abort();
  }
  std::vector<uint8_t> alone(in.begin(), in.begin() + static_cast<long>(h.size()));
  ec::RecordBatchInfo again = ec::read_record_batch_header(alone.data(), alone.size());
  if (!again.ok() || again.batch_count != 1 || again.first.producer_id != h.producer_id ||
      again.first.base_sequence != h.base_sequence || again.first.attributes != h.attributes) {
    std::abort();
  }
  return 0;
}
