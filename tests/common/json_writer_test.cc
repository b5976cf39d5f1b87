// tests/common/json_writer_test.cc: JSON output is always valid, whatever
// bytes reach a string (control characters, quotes, invalid UTF-8).
#include "common/json_writer.h"

#include <gtest/gtest.h>

namespace epochgate::common {
namespace {

TEST(JsonWriterTest, NestedContainersGetCommasRight) {
  JsonWriter w;
  w.begin_object()
      .key("a")
      .value(1)
      .key("b")
      .begin_array()
      .value("x")
      .value(true)
      .null()
      .begin_object()
      .end_object()
      .end_array()
      .key("c")
      .begin_object()
      .key("d")
      .value(-5)
      .end_object()
      .end_object();
  EXPECT_EQ(w.str(), R"({"a":1,"b":["x",true,null,{}],"c":{"d":-5}})");
}

TEST(JsonWriterTest, EscapesQuotesBackslashesAndControlCharacters) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\nd\te\x01\x7f", 12));
  EXPECT_EQ(out, R"("a\"b\\c\nd\te\u0001\u007f\u0000")");  // NUL included
}

TEST(JsonWriterTest, InvalidUtf8BecomesReplacementCharacter) {
  std::string out;
  append_json_string(out, "ok \xc3\xa9 \xff \xc3 \xed\xa0\x80 \xf0\x9f\x98\x80");
  EXPECT_EQ(out, "\"ok \xc3\xa9 \\ufffd \\ufffd \\ufffd\\ufffd\\ufffd \xf0\x9f\x98\x80\"");
}

TEST(JsonWriterTest, DoublesAreShortestAndNonFiniteIsNull) {
  JsonWriter w;
  w.begin_array().value(0.1).value(2.5).value(1.0 / 0.0).end_array();
  EXPECT_EQ(w.str(), "[0.1,2.5,null]");
}

TEST(JsonWriterTest, UnsignedAndSixtyFourBitIntegers) {
  JsonWriter w;
  w.begin_array()
      .value(uint64_t{18446744073709551615u})
      .value(int64_t{-9223372036854775807 - 1})
      .end_array();
  EXPECT_EQ(w.str(), "[18446744073709551615,-9223372036854775808]");
}

}  // namespace
}  // namespace epochgate::common
