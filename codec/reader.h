// codec/reader.h: bounds-checked reads of Kafka primitive types from one frame.
// The reader has a sticky error: after the first failure every read returns a
// zero value and the Status keeps the first error. Lengths and counts are
// checked against the bytes left before the caller may allocate anything,
// and the reader keeps the tally that bounds what one decode may build:
// entries of struct arrays (capped) and the bytes the decoded objects take.
// Must never: allocate, or let a cap be passed without failing the decode.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "codec/status.h"
#include "codec/types.h"

namespace epochgate::codec {

/// Reads big-endian fixed ints, varints, strings, bytes, arrays and tagged
/// fields (docs/architecture.md section 4) from [data, data+size). Never reads past the end.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : begin_(data), pos_(data), end_(data + size) {}

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  size_t remaining() const { return static_cast<size_t>(end_ - pos_); }
  size_t offset() const { return static_cast<size_t>(pos_ - begin_); }
  const uint8_t* position() const { return pos_; }

  /// Records an error (first one wins) and makes every later read fail.
  void fail(Errc e, const char* field = "") {
    if (status_.ok()) status_ = Status{e, static_cast<uint32_t>(offset()), field};
    pos_ = end_;
  }
  /// Names the schema field being read, for error messages (static string).
  void set_field(const char* field) { field_ = field; }

  /// Caps the entries one decode may build: every element of an array of
  /// structs (topics, partitions, ...) and every unknown tagged field counts
  /// one. Passing it fails the decode with kTooManyPartitions. Default: no cap.
  void set_max_entries(uint64_t n) { max_entries_ = n; }
  /// Counts `n` entries about to be decoded, before anything is allocated for
  /// them. Returns false (and fails the reader) when that passes the cap.
  bool take_entries(uint64_t n) {
    entries_ += n;
    if (entries_ > max_entries_) {
      fail(Errc::kTooManyPartitions, field_);
      return false;
    }
    return true;
  }
  /// Entries counted so far (see set_max_entries).
  uint64_t entries() const { return entries_; }
  /// Adds `n` bytes to the estimate of heap memory the decoded objects hold.
  void charge(uint64_t n) { decoded_bytes_ += n; }
  /// Heap bytes the objects decoded so far hold (vector storage at its
  /// declared count, string bytes, unknown tagged fields), in bytes; not the
  /// top-level message itself, and not record data (a view into the frame).
  uint64_t decoded_bytes() const { return decoded_bytes_; }

  int8_t int8() { return static_cast<int8_t>(fixed<uint8_t>()); }
  int16_t int16() { return static_cast<int16_t>(fixed<uint16_t>()); }
  int32_t int32() { return static_cast<int32_t>(fixed<uint32_t>()); }
  int64_t int64() { return static_cast<int64_t>(fixed<uint64_t>()); }
  uint16_t uint16() { return fixed<uint16_t>(); }
  uint32_t uint32() { return fixed<uint32_t>(); }
  bool boolean() { return fixed<uint8_t>() != 0; }
  double float64() {
    uint64_t bits = fixed<uint64_t>();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }
  Uuid uuid() {
    Uuid u{};
    if (need(16)) {
      std::memcpy(u.data(), pos_, 16);
      pos_ += 16;
    }
    return u;
  }

  /// Unsigned varint, at most 5 bytes (values up to 2^32-1). One byte (every
  /// count, length and tagged section of a usual request) is read inline.
  uint32_t uvarint() {
    if (pos_ != end_ && *pos_ < 0x80) return *pos_++;
    return uvarint_long();
  }
  /// Zig-zag varint (int32) and varlong (int64), as in record bodies.
  int32_t varint();
  int64_t varlong();

  /// STRING / COMPACT_STRING (non-nullable). Null on the wire is an error.
  std::string string(bool compact);
  /// NULLABLE_STRING / COMPACT_NULLABLE_STRING.
  std::optional<std::string> nullable_string(bool compact);
  /// string() and nullable_string() as views into the frame: the same checks
  /// and errors, nothing copied and nothing charged. Valid while the frame is.
  std::string_view string_view(bool compact);
  std::optional<std::string_view> nullable_string_view(bool compact);
  /// BYTES / COMPACT_BYTES / (COMPACT_)NULLABLE_BYTES / records: a view, not a copy.
  Bytes bytes(bool compact, bool nullable);

  /// Array length: ARRAY (int32, -1 null) or COMPACT_ARRAY (uvarint N+1, 0 null).
  /// Returns -1 for null (an error unless `nullable`), else a count that is
  /// at most remaining() / min_element_size, so the caller can reserve safely.
  int32_t array_length(bool compact, bool nullable, size_t min_element_size = 1);

  /// Reads the header of a tagged-field section: the number of fields.
  /// Bounded by remaining() (each field takes at least 2 bytes).
  uint32_t tagged_count();
  /// Reads one tag and its size, checks tag > previous (pass -1 first) and
  /// that size fits. Returns false on error.
  bool tag_header(int64_t previous_tag, uint32_t& tag, uint32_t& size);
  /// Takes `size` raw bytes as a view (tagged field payload).
  Bytes raw(uint32_t size);
  /// Skips `size` bytes.
  void skip(size_t size) {
    if (need(size)) pos_ += size;
  }

 private:
  bool need(size_t n) {
    if (static_cast<size_t>(end_ - pos_) < n) {
      fail(Errc::kTruncated, field_);
      return false;
    }
    return true;
  }
  template <typename T>
  T fixed() {
    if (!need(sizeof(T))) return 0;
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | pos_[i]);
    pos_ += sizeof(T);
    return v;
  }
  int64_t string_length(bool compact, bool& is_null);
  /// uvarint() past its one-byte case (and at the end, to fail there).
  uint32_t uvarint_long();

  const uint8_t* begin_;
  const uint8_t* pos_;
  const uint8_t* end_;
  const char* field_ = "";
  Status status_;
  uint64_t max_entries_ = std::numeric_limits<uint64_t>::max();
  uint64_t entries_ = 0;
  uint64_t decoded_bytes_ = 0;
};

}  // namespace epochgate::codec
