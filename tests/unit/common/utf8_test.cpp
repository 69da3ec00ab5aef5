// Expected values follow Python 3's bytes.decode('utf-8', 'replace'), which implements
// Unicode's maximal-subpart rule.
#include "common/utf8.hpp"

#include <catch2/catch.hpp>

using namespace exedev::detail;

namespace {
const std::string fffd = "\xEF\xBF\xBD";
}

TEST_CASE("UTF-8 decoding reads the code point of every valid length", "[unit][common]") {
  const std::pair<std::string, char32_t> cases[] = {{"A", U'A'},
                                                    {"\xC2\x80", 0x80},
                                                    {"\xDF\xBF", 0x7FF},
                                                    {"\xE0\xA0\x80", 0x800},
                                                    {"\xED\x9F\xBF", 0xD7FF},
                                                    {"\xEF\xBF\xBF", 0xFFFF},
                                                    {"\xF0\x90\x80\x80", 0x10000},
                                                    {"\xF4\x8F\xBF\xBF", 0x10FFFF}};
  for (const auto& [text, code_point] : cases) {
    const auto sequence = utf8_sequence_at(text, 0);
    CHECK(sequence.length == text.size());
    CHECK(sequence.code_point == code_point);
    CHECK(sequence.fault == Utf8Fault::none);
    std::string encoded;
    append_utf8(encoded, code_point);
    CHECK(encoded == text);
  }
}

TEST_CASE("UTF-8 decoding names each fault and the maximal invalid subpart", "[unit][common]") {
  const auto at0 = [](std::string_view text) { return utf8_sequence_at(text, 0); };
  CHECK(at0("\xFF").fault == Utf8Fault::invalid_start);
  CHECK(at0("\x80").fault == Utf8Fault::invalid_start);
  CHECK(at0("\xC0\xAF").fault == Utf8Fault::invalid_start);  // overlong lead
  CHECK(at0("\xF5\x80").fault == Utf8Fault::invalid_start);  // beyond U+10FFFF
  CHECK(at0("\xE0\x80\xAF").fault == Utf8Fault::invalid_continuation);  // overlong
  CHECK(at0("\xE0\x80\xAF").length == 1);
  CHECK(at0("\xED\xA0\x80").fault == Utf8Fault::invalid_continuation);  // surrogate
  CHECK(at0("\xF4\x90\x80\x80").fault == Utf8Fault::invalid_continuation);
  CHECK(at0("\xE2\x82" "b").fault == Utf8Fault::invalid_continuation);
  CHECK(at0("\xE2\x82" "b").length == 2);
  CHECK(at0("\xF0\x9F\x98").fault == Utf8Fault::truncated);
  CHECK(at0("\xF0\x9F\x98").length == 3);
}

TEST_CASE("utf8_replace_invalid gives one U+FFFD per maximal invalid subpart", "[unit][common]") {
  CHECK(utf8_replace_invalid("") == "");
  CHECK(utf8_replace_invalid("plain \xC3\xBC") == "plain \xC3\xBC");
  CHECK(utf8_replace_invalid("\xFF") == fffd);
  CHECK(utf8_replace_invalid("a\xE2\x82" "b") == "a" + fffd + "b");
  CHECK(utf8_replace_invalid("\xE2\x82") == fffd);
  CHECK(utf8_replace_invalid("\xED\xA0\x80") == fffd + fffd + fffd);
  CHECK(utf8_replace_invalid("\xC0\xAF") == fffd + fffd);
  CHECK(utf8_replace_invalid("\xF4\x90\x80\x80") == fffd + fffd + fffd + fffd);
  CHECK(utf8_replace_invalid("\xF0\x9F\x98\x80\xF0\x9F") == "\xF0\x9F\x98\x80" + fffd);
}

TEST_CASE("is_valid_utf8 and utf8_code_points agree on every two-byte string", "[unit][common]") {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b) {
      const std::string text{static_cast<char>(a), static_cast<char>(b)};
      const bool valid = is_valid_utf8(text);
      CHECK(valid == utf8_code_points(text).has_value());
      CHECK(valid == (utf8_replace_invalid(text) == text));
    }
  }
  CHECK(utf8_code_points("a\xC3\xBC\xF0\x9F\x98\x80") == std::vector<char32_t>{U'a', 0xFC, 0x1F600});
  CHECK_FALSE(utf8_code_points("a\xED\xA0\x80").has_value());
}
