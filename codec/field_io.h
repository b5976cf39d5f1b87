// codec/field_io.h: the small set of inline helpers that generated message
// code (codec/generator/generate.py) calls to read and write fields, arrays
// and tagged-field sections. Keeping them here keeps the generated code short.
// Must never: allocate from a wire length before Reader checked it against the
// bytes left and its entry cap, size a vector from a wire count beyond what
// the bytes left hold decoded, or throw.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codec/reader.h"
#include "codec/writer.h"

namespace epochgate::codec::wire {

// ---- scalars -------------------------------------------------------------

inline void get(Reader& r, bool, int8_t& x) { x = r.int8(); }
inline void get(Reader& r, bool, int16_t& x) { x = r.int16(); }
inline void get(Reader& r, bool, int32_t& x) { x = r.int32(); }
inline void get(Reader& r, bool, int64_t& x) { x = r.int64(); }
inline void get(Reader& r, bool, uint16_t& x) { x = r.uint16(); }
inline void get(Reader& r, bool, uint32_t& x) { x = r.uint32(); }
inline void get(Reader& r, bool, bool& x) { x = r.boolean(); }
inline void get(Reader& r, bool, double& x) { x = r.float64(); }
inline void get(Reader& r, bool, Uuid& x) { x = r.uuid(); }
inline void get(Reader& r, bool flex, std::string& x) { x = r.string(flex); }
/// A field whose C++ type is nullable; `nullable` says whether null is valid
/// in this version (a null in a non-nullable version is kUnexpectedNull).
inline void get(Reader& r, bool flex, std::optional<std::string>& x, bool nullable) {
  if (nullable) {
    x = r.nullable_string(flex);
  } else {
    x = r.string(flex);
  }
}
inline void get(Reader& r, bool flex, Bytes& x, bool nullable) { x = r.bytes(flex, nullable); }

inline void put(Writer& w, bool, int8_t x) { w.int8(x); }
inline void put(Writer& w, bool, int16_t x) { w.int16(x); }
inline void put(Writer& w, bool, int32_t x) { w.int32(x); }
inline void put(Writer& w, bool, int64_t x) { w.int64(x); }
inline void put(Writer& w, bool, uint16_t x) { w.uint16(x); }
inline void put(Writer& w, bool, uint32_t x) { w.uint32(x); }
inline void put(Writer& w, bool, bool x) { w.boolean(x); }
inline void put(Writer& w, bool, double x) { w.float64(x); }
inline void put(Writer& w, bool, const Uuid& x) { w.uuid(x); }
inline void put(Writer& w, bool flex, const std::string& x) { w.string(x, flex); }
/// Null in a version where the field is not nullable cannot be expressed on
/// the wire; encoding cannot fail, so it is written as the empty string.
inline void put(Writer& w, bool flex, const std::optional<std::string>& x, bool nullable) {
  if (x || !nullable) {
    w.string(x ? *x : std::string(), flex);
  } else {
    w.nullable_string(x, flex);
  }
}
/// As above: a null Bytes in a non-nullable version is written as empty.
inline void put(Writer& w, bool flex, const Bytes& x, bool nullable) {
  if (x.is_null && !nullable) {
    w.bytes(Bytes{}, flex);
  } else {
    w.bytes(x, flex);
  }
}

// ---- structs and arrays --------------------------------------------------

/// Generated structs have read/write/min_size members.
template <class T>
concept WireStruct = requires(T& t, const T& c, Reader& r, Writer& w, int16_t v, bool f) {
  t.read(r, v, f);
  c.write(w, v, f);
  { T::min_size(v, f) } -> std::convertible_to<size_t>;
};

template <class T>
void get_elem(Reader& r, int16_t v, bool flex, T& x) {
  if constexpr (WireStruct<T>) {
    x.read(r, v, flex);
  } else {
    get(r, flex, x);
  }
}

template <class T>
void put_elem(Writer& w, int16_t v, bool flex, const T& x) {
  if constexpr (WireStruct<T>) {
    x.write(w, v, flex);
  } else {
    put(w, flex, x);
  }
}

/// Fewest bytes one element of an array of T takes on the wire, so a count
/// can be checked against the bytes left before anything is allocated.
template <class T>
size_t elem_min_size(int16_t v, bool flex) {
  if constexpr (WireStruct<T>) {
    size_t n = T::min_size(v, flex);
    return n == 0 ? 1 : n;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return flex ? 1 : 2;
  } else if constexpr (std::is_same_v<T, Uuid>) {
    return 16;
  } else {
    return sizeof(T);
  }
}

/// Reads an array body of `n` elements (n already bounded by the Reader).
/// Struct elements count against the Reader's entry cap and every element's
/// decoded size is charged, both before anything is allocated. The count is
/// bounded only by the wire's smallest element (3 bytes for a flexible
/// Produce topic), while a decoded element can take 30 times that, so the
/// vector reserves no more than the bytes left could hold decoded and grows
/// past that only as elements actually decode.
template <class T>
void get_elems(Reader& r, int16_t v, bool flex, int32_t n, std::vector<T>& out) {
  out.clear();
  if (n <= 0 || !r.ok()) return;
  const size_t count = static_cast<size_t>(n);
  if constexpr (WireStruct<T>) {
    if (!r.take_entries(count)) return;
  }
  r.charge(uint64_t{count} * sizeof(T));
  out.reserve(std::min(count, r.remaining() / sizeof(T) + 1));
  for (size_t i = 0; i < count; ++i) {
    get_elem(r, v, flex, out.emplace_back());
    if (!r.ok()) return;
  }
  r.charge(uint64_t{out.capacity() - count} * sizeof(T));  // what growth left unused
}

template <class T>
void get_array(Reader& r, int16_t v, bool flex, std::vector<T>& out) {
  int32_t n = r.array_length(flex, false, elem_min_size<T>(v, flex));
  get_elems(r, v, flex, n, out);
}

template <class T>
void get_array(Reader& r, int16_t v, bool flex, std::optional<std::vector<T>>& out,
               bool nullable) {
  int32_t n = r.array_length(flex, nullable, elem_min_size<T>(v, flex));
  if (!r.ok() || n < 0) {
    out.reset();
    return;
  }
  out.emplace();
  get_elems(r, v, flex, n, *out);
}

template <class T>
void put_array(Writer& w, int16_t v, bool flex, const std::vector<T>& xs) {
  w.array_length(static_cast<int32_t>(xs.size()), flex);
  for (const auto& x : xs) put_elem(w, v, flex, x);
}

/// A null array in a version where it is not nullable is written as empty.
template <class T>
void put_array(Writer& w, int16_t v, bool flex, const std::optional<std::vector<T>>& xs,
               bool nullable) {
  if (!xs) {
    w.array_length(nullable ? -1 : 0, flex);
    return;
  }
  put_array(w, v, flex, *xs);
}

// ---- tagged fields -------------------------------------------------------

/// Reads a tagged-field section. `known(tag)` decodes a tag the schema knows
/// for this version from the Reader and returns true, or returns false for an
/// unknown tag, which is kept as raw bytes in `unknown`. A known field must
/// use exactly its declared size.
template <class Known>
void read_tags(Reader& r, TaggedFields& unknown, Known&& known) {
  unknown.clear();
  uint32_t n = r.tagged_count();
  int64_t prev = -1;
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    uint32_t tag = 0, size = 0;
    if (!r.tag_header(prev, tag, size)) return;
    prev = tag;
    size_t start = r.offset();
    if (known(tag)) {
      if (r.ok() && r.offset() - start != size) r.fail(Errc::kBadTaggedFields);
    } else {
      // Two wire bytes each: counted like array entries, or a tagged section
      // would build 12 bytes of vector per byte of frame past every cap.
      if (!r.take_entries(1)) return;
      r.charge(sizeof(TaggedField));
      unknown.push_back(TaggedField{tag, r.raw(size)});
    }
  }
}

/// For structs without known tags in a version.
inline bool no_known_tags(uint32_t) { return false; }

/// Writes a tagged-field section: known fields (begin/end around each, in
/// ascending tag order) merged with the unknown ones kept from decode.
class TagWriter {
 public:
  TagWriter(Writer& w, const TaggedFields& unknown, uint32_t known_count)
      : w_(w), unknown_(unknown) {
    w_.uvarint(known_count + static_cast<uint32_t>(unknown.size()));
  }
  /// Starts the known field `tag`; the caller then writes its value.
  void begin(uint32_t tag) {
    flush_below(tag);
    w_.uvarint(tag);
    mark_ = w_.size();
  }
  /// Ends the field started by begin(): inserts its size before the value.
  void end() {
    size_t len = w_.size() - mark_;
    uint8_t tmp[5];
    size_t k = 0;
    uint32_t v = static_cast<uint32_t>(len);
    while (v >= 0x80) {
      tmp[k++] = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    tmp[k++] = static_cast<uint8_t>(v);
    auto& buf = w_.buffer();
    buf.insert(buf.begin() + static_cast<std::ptrdiff_t>(mark_), tmp, tmp + k);
  }
  /// Writes the unknown fields left (tags above every known one).
  void finish() { flush_below(UINT32_MAX, true); }

 private:
  void flush_below(uint32_t tag, bool all = false) {
    while (next_ < unknown_.size() && (all || unknown_[next_].tag < tag)) {
      const TaggedField& f = unknown_[next_++];
      w_.uvarint(f.tag);
      w_.uvarint(f.data.size);
      w_.raw(f.data.data, f.data.size);
    }
  }
  Writer& w_;
  const TaggedFields& unknown_;
  size_t next_ = 0;
  size_t mark_ = 0;
};

}  // namespace epochgate::codec::wire
