// codec/reader.cc: varints, strings, bytes, arrays and tagged-field headers.
#include "codec/reader.h"

namespace epochgate::codec {

uint32_t Reader::uvarint_long() {
  uint32_t value = 0;
  for (int i = 0; i < 5; ++i) {
    if (!need(1)) return 0;
    uint8_t b = *pos_++;
    if (i == 4 && (b & 0xF0) != 0) {  // more than 32 bits
      fail(Errc::kBadVarint, field_);
      return 0;
    }
    value |= static_cast<uint32_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  fail(Errc::kBadVarint, field_);
  return 0;
}

int32_t Reader::varint() {
  uint32_t raw = uvarint();
  return static_cast<int32_t>((raw >> 1) ^ (~(raw & 1) + 1));
}

int64_t Reader::varlong() {
  uint64_t raw = 0;
  for (int i = 0; i < 10; ++i) {
    if (!need(1)) return 0;
    uint8_t b = *pos_++;
    if (i == 9 && (b & 0xFE) != 0) {
      fail(Errc::kBadVarint, field_);
      return 0;
    }
    raw |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) return static_cast<int64_t>((raw >> 1) ^ (~(raw & 1) + 1));
  }
  fail(Errc::kBadVarint, field_);
  return 0;
}

int64_t Reader::string_length(bool compact, bool& is_null) {
  is_null = false;
  int64_t len;
  if (compact) {
    uint32_t n = uvarint();
    if (!ok()) return 0;
    if (n == 0) {
      is_null = true;
      return 0;
    }
    len = static_cast<int64_t>(n) - 1;
  } else {
    len = int16();
    if (!ok()) return 0;
    if (len == -1) {
      is_null = true;
      return 0;
    }
    if (len < 0) {
      fail(Errc::kNegativeLength, field_);
      return 0;
    }
  }
  if (static_cast<uint64_t>(len) > remaining()) {
    fail(Errc::kLengthOverflow, field_);
    return 0;
  }
  return len;
}

std::string_view Reader::string_view(bool compact) {
  bool is_null = false;
  int64_t len = string_length(compact, is_null);
  if (!ok()) return {};
  if (is_null) {
    fail(Errc::kUnexpectedNull, field_);
    return {};
  }
  std::string_view s(reinterpret_cast<const char*>(pos_), static_cast<size_t>(len));
  pos_ += len;
  return s;
}

std::optional<std::string_view> Reader::nullable_string_view(bool compact) {
  bool is_null = false;
  int64_t len = string_length(compact, is_null);
  if (!ok() || is_null) return std::nullopt;
  std::string_view s(reinterpret_cast<const char*>(pos_), static_cast<size_t>(len));
  pos_ += len;
  return s;
}

std::string Reader::string(bool compact) {
  std::string_view v = string_view(compact);
  if (!ok()) return {};
  charge(v.size());
  return std::string(v);
}

std::optional<std::string> Reader::nullable_string(bool compact) {
  std::optional<std::string_view> v = nullable_string_view(compact);
  if (!v) return std::nullopt;
  charge(v->size());
  return std::string(*v);
}

Bytes Reader::bytes(bool compact, bool nullable) {
  int64_t len;
  if (compact) {
    uint32_t n = uvarint();
    if (!ok()) return {};
    len = static_cast<int64_t>(n) - 1;
  } else {
    len = int32();
    if (!ok()) return {};
    if (len < -1) {
      fail(Errc::kNegativeLength, field_);
      return {};
    }
  }
  if (len == -1) {
    if (!nullable) fail(Errc::kUnexpectedNull, field_);
    return Bytes::null();
  }
  if (static_cast<uint64_t>(len) > remaining()) {
    fail(Errc::kLengthOverflow, field_);
    return {};
  }
  Bytes b{pos_, static_cast<uint32_t>(len), false};
  pos_ += len;
  return b;
}

int32_t Reader::array_length(bool compact, bool nullable, size_t min_element_size) {
  int64_t n;
  if (compact) {
    uint32_t raw = uvarint();
    if (!ok()) return 0;
    n = static_cast<int64_t>(raw) - 1;
  } else {
    n = int32();
    if (!ok()) return 0;
    if (n < -1) {
      fail(Errc::kNegativeLength, field_);
      return 0;
    }
  }
  if (n == -1) {
    if (!nullable) {
      fail(Errc::kUnexpectedNull, field_);
      return 0;
    }
    return -1;
  }
  if (min_element_size == 0) min_element_size = 1;
  if (static_cast<uint64_t>(n) > remaining() / min_element_size) {
    fail(Errc::kLengthOverflow, field_);
    return 0;
  }
  return static_cast<int32_t>(n);
}

uint32_t Reader::tagged_count() {
  uint32_t n = uvarint();
  if (!ok()) return 0;
  if (n > remaining() / 2) {
    fail(Errc::kBadTaggedFields, field_);
    return 0;
  }
  return n;
}

bool Reader::tag_header(int64_t previous_tag, uint32_t& tag, uint32_t& size) {
  tag = uvarint();
  size = uvarint();
  if (!ok()) return false;
  if (static_cast<int64_t>(tag) <= previous_tag || size > remaining()) {
    fail(Errc::kBadTaggedFields, field_);
    return false;
  }
  return true;
}

Bytes Reader::raw(uint32_t size) {
  if (!need(size)) return {};
  Bytes b{pos_, size, false};
  pos_ += size;
  return b;
}

}  // namespace epochgate::codec
