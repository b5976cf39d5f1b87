// tests/codec/primitives_test.cc: Reader/Writer primitive types (docs/architecture.md section 4):
// varint limits and malformed varints, (compact, nullable) strings and bytes,
// negative lengths, array counts that cannot fit in the bytes left.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "codec/reader.h"
#include "codec/writer.h"

namespace epochgate::codec {
namespace {

using Buf = std::vector<uint8_t>;

Reader reader(const Buf& b) { return Reader(b.data(), b.size()); }

TEST(Primitives, FixedIntsAreBigEndianAndRoundTrip) {
  Buf b;
  Writer w(b);
  w.int8(-2);
  w.int16(-300);
  w.int32(0x01020304);
  w.int64(std::numeric_limits<int64_t>::min());
  w.uint16(0xfffe);
  w.uint32(0xfffffffe);
  w.boolean(true);
  w.float64(-1.5);
  EXPECT_EQ(b[3], 0x01);
  EXPECT_EQ(b[6], 0x04);
  Reader r = reader(b);
  EXPECT_EQ(r.int8(), -2);
  EXPECT_EQ(r.int16(), -300);
  EXPECT_EQ(r.int32(), 0x01020304);
  EXPECT_EQ(r.int64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(r.uint16(), 0xfffe);
  EXPECT_EQ(r.uint32(), 0xfffffffeu);
  EXPECT_TRUE(r.boolean());
  EXPECT_EQ(r.float64(), -1.5);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(Primitives, TruncatedFixedIntFailsAndStaysFailed) {
  Buf b{0x00, 0x01, 0x02};
  Reader r = reader(b);
  EXPECT_EQ(r.int32(), 0);
  EXPECT_EQ(r.status().code, Errc::kTruncated);
  EXPECT_EQ(r.int8(), 0);  // sticky: later reads fail too, first error kept
  EXPECT_EQ(r.status().code, Errc::kTruncated);
  EXPECT_EQ(r.status().offset, 0u);
}

TEST(Primitives, UnsignedVarintLimits) {
  for (uint32_t v : {0u, 1u, 127u, 128u, 16383u, 16384u, 0x0fffffffu, 0xffffffffu}) {
    Buf b;
    Writer(b).uvarint(v);
    Reader r = reader(b);
    EXPECT_EQ(r.uvarint(), v);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.remaining(), 0u);
  }
  Buf max;
  Writer(max).uvarint(0xffffffffu);
  EXPECT_EQ(max, (Buf{0xff, 0xff, 0xff, 0xff, 0x0f}));
}

TEST(Primitives, VarintLongerThanItsTypeIsBadVarint) {
  // Six bytes with continuation bits: longer than any uint32.
  Buf six{0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  Reader r1 = reader(six);
  r1.uvarint();
  EXPECT_EQ(r1.status().code, Errc::kBadVarint);
  // Five bytes but bits above 2^32 set in the last one.
  Buf overflow{0xff, 0xff, 0xff, 0xff, 0x1f};
  Reader r2 = reader(overflow);
  r2.uvarint();
  EXPECT_EQ(r2.status().code, Errc::kBadVarint);
  // Eleven-byte varlong.
  Buf eleven(10, 0x80);
  eleven.push_back(0x01);
  Reader r3 = reader(eleven);
  r3.varlong();
  EXPECT_EQ(r3.status().code, Errc::kBadVarint);
  // A varint cut short is truncated, not bad.
  Buf cut{0x80, 0x80};
  Reader r4 = reader(cut);
  r4.uvarint();
  EXPECT_EQ(r4.status().code, Errc::kTruncated);
}

TEST(Primitives, ZigZagVarintAndVarlongExtremes) {
  for (int32_t v : {0, -1, 1, -64, 64, std::numeric_limits<int32_t>::min(),
                    std::numeric_limits<int32_t>::max()}) {
    Buf b;
    Writer(b).varint(v);
    Reader r = reader(b);
    EXPECT_EQ(r.varint(), v);
    EXPECT_TRUE(r.ok());
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, std::numeric_limits<int64_t>::min(),
                    std::numeric_limits<int64_t>::max()}) {
    Buf b;
    Writer(b).varlong(v);
    EXPECT_LE(b.size(), 10u);
    Reader r = reader(b);
    EXPECT_EQ(r.varlong(), v);
    EXPECT_TRUE(r.ok());
  }
  Buf one;
  Writer(one).varint(-1);
  EXPECT_EQ(one, Buf{0x01});
}

TEST(Primitives, StringsClassicAndCompact) {
  Buf b;
  Writer w(b);
  w.string("abc", false);
  w.string("abc", true);
  w.nullable_string(std::nullopt, false);
  w.nullable_string(std::nullopt, true);
  w.string("", true);
  EXPECT_EQ(b, (Buf{0, 3, 'a', 'b', 'c', 4, 'a', 'b', 'c', 0xff, 0xff, 0, 1}));
  Reader r = reader(b);
  EXPECT_EQ(r.string(false), "abc");
  EXPECT_EQ(r.string(true), "abc");
  EXPECT_EQ(r.nullable_string(false), std::nullopt);
  EXPECT_EQ(r.nullable_string(true), std::nullopt);
  EXPECT_EQ(r.nullable_string(true), std::optional<std::string>(""));
  EXPECT_TRUE(r.ok());
}

TEST(Primitives, NullInNonNullableStringIsUnexpectedNull) {
  Buf b{0xff, 0xff};
  Reader r = reader(b);
  r.string(false);
  EXPECT_EQ(r.status().code, Errc::kUnexpectedNull);
  Buf c{0x00};
  Reader rc = reader(c);
  rc.string(true);
  EXPECT_EQ(rc.status().code, Errc::kUnexpectedNull);
}

TEST(Primitives, NegativeLengthsOtherThanNullAreRejected) {
  Buf s{0xff, 0xfe};  // string length -2
  Reader rs = reader(s);
  rs.nullable_string(false);
  EXPECT_EQ(rs.status().code, Errc::kNegativeLength);
  Buf by{0xff, 0xff, 0xff, 0xfe};  // bytes length -2
  Reader rb = reader(by);
  rb.bytes(false, true);
  EXPECT_EQ(rb.status().code, Errc::kNegativeLength);
  Buf arr{0x80, 0x00, 0x00, 0x00};  // array count INT32_MIN
  Reader ra = reader(arr);
  ra.array_length(false, true);
  EXPECT_EQ(ra.status().code, Errc::kNegativeLength);
}

TEST(Primitives, LengthLargerThanBytesLeftIsLengthOverflow) {
  Buf s{0x00, 0x05, 'a', 'b'};
  Reader rs = reader(s);
  rs.string(false);
  EXPECT_EQ(rs.status().code, Errc::kLengthOverflow);
  Buf cs{0x06, 'a'};
  Reader rcs = reader(cs);
  rcs.string(true);
  EXPECT_EQ(rcs.status().code, Errc::kLengthOverflow);
  Buf by{0x7f, 0xff, 0xff, 0xff, 1, 2, 3};
  Reader rb = reader(by);
  rb.bytes(false, false);
  EXPECT_EQ(rb.status().code, Errc::kLengthOverflow);
  Buf cb{0xff, 0xff, 0xff, 0xff, 0x0f};  // compact bytes of 2^32-2 bytes
  Reader rcb = reader(cb);
  rcb.bytes(true, true);
  EXPECT_EQ(rcb.status().code, Errc::kLengthOverflow);
}

TEST(Primitives, BytesAreViewsIntoTheInputNeverCopies) {
  Buf b;
  Writer w(b);
  w.bytes(Bytes{reinterpret_cast<const uint8_t*>("xyz"), 3, false}, true);
  w.bytes(Bytes::null(), false);
  w.bytes(Bytes::null(), true);
  Reader r = reader(b);
  Bytes x = r.bytes(true, false);
  EXPECT_EQ(x.data, b.data() + 1);  // points into the buffer
  EXPECT_EQ(x.view(), "xyz");
  EXPECT_TRUE(r.bytes(false, true).is_null);
  EXPECT_TRUE(r.bytes(true, true).is_null);
  EXPECT_TRUE(r.ok());
  Buf n{0xff, 0xff, 0xff, 0xff};
  Reader rn = reader(n);
  rn.bytes(false, false);
  EXPECT_EQ(rn.status().code, Errc::kUnexpectedNull);
}

TEST(Primitives, HugeArrayCountsFailBeforeAnyAllocation) {
  // int32 count 2^31-1 with 8 bytes left: cannot fit even at 1 byte each.
  Buf b{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0};
  Reader r = reader(b);
  EXPECT_EQ(r.array_length(false, false, 1), 0);
  EXPECT_EQ(r.status().code, Errc::kLengthOverflow);
  // Compact count 2^32-2 (uvarint 2^32-1).
  Buf c{0xff, 0xff, 0xff, 0xff, 0x0f, 0};
  Reader rc = reader(c);
  rc.array_length(true, false, 1);
  EXPECT_EQ(rc.status().code, Errc::kLengthOverflow);
  // 3 elements of at least 4 bytes do not fit in 8 bytes, 2 do.
  Buf d{0, 0, 0, 3, 1, 2, 3, 4, 5, 6, 7, 8};
  Reader rd = reader(d);
  rd.array_length(false, false, 4);
  EXPECT_EQ(rd.status().code, Errc::kLengthOverflow);
  Buf e{0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8};
  Reader re = reader(e);
  EXPECT_EQ(re.array_length(false, false, 4), 2);
  EXPECT_TRUE(re.ok());
}

TEST(Primitives, NullArrays) {
  Buf b{0xff, 0xff, 0xff, 0xff, 0x00};
  Reader r = reader(b);
  EXPECT_EQ(r.array_length(false, true), -1);
  EXPECT_EQ(r.array_length(true, true), -1);
  EXPECT_TRUE(r.ok());
  Reader r2 = reader(b);
  r2.array_length(false, false);
  EXPECT_EQ(r2.status().code, Errc::kUnexpectedNull);
}

TEST(Primitives, TaggedFieldHeaders) {
  Buf b;
  Writer w(b);
  w.uvarint(2);
  w.uvarint(1);
  w.uvarint(2);
  w.raw("ab", 2);
  w.uvarint(1);  // not ascending
  w.uvarint(0);
  Reader r = reader(b);
  EXPECT_EQ(r.tagged_count(), 2u);
  uint32_t tag, size;
  ASSERT_TRUE(r.tag_header(-1, tag, size));
  EXPECT_EQ(tag, 1u);
  EXPECT_EQ(r.raw(size).view(), "ab");
  EXPECT_FALSE(r.tag_header(1, tag, size));
  EXPECT_EQ(r.status().code, Errc::kBadTaggedFields);
  // A count that cannot fit in the bytes left.
  Buf c{0x7f, 0x00};
  Reader rc = reader(c);
  rc.tagged_count();
  EXPECT_EQ(rc.status().code, Errc::kBadTaggedFields);
  // A size that overruns.
  Buf d{0x01, 0x00, 0x09, 0x01};
  Reader rd = reader(d);
  rd.tagged_count();
  EXPECT_FALSE(rd.tag_header(-1, tag, size));
  EXPECT_EQ(rd.status().code, Errc::kBadTaggedFields);
}

TEST(Primitives, UuidIsSixteenRawBytes) {
  Uuid u{};
  for (int i = 0; i < 16; ++i) u[i] = static_cast<uint8_t>(i + 1);
  Buf b;
  Writer(b).uuid(u);
  ASSERT_EQ(b.size(), 16u);
  Reader r = reader(b);
  EXPECT_EQ(r.uuid(), u);
  Buf short_buf(15, 0);
  Reader rs = reader(short_buf);
  rs.uuid();
  EXPECT_EQ(rs.status().code, Errc::kTruncated);
}

TEST(Primitives, StatusMessageNamesErrorOffsetAndField) {
  Buf b{0x00, 0x09};
  Reader r = reader(b);
  r.set_field("Topics");
  r.string(false);
  EXPECT_EQ(r.status().message(), "length_overflow at byte 2 (field Topics)");
  EXPECT_STREQ(errc_name(Errc::kTrailingBytes), "trailing_bytes");
}

}  // namespace
}  // namespace epochgate::codec
