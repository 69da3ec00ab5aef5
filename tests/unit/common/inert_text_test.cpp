// inert_text: VM-chosen text made safe for a terminal and a log line, bounded.
#include "common/inert_text.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <utility>

using exedev::detail::inert_text;
using namespace std::string_literals;

TEST_CASE("inert_text escapes controls, C1 controls, invalid UTF-8 and backslashes", "[unit][common]") {
  const std::pair<std::string, std::string> cases[] = {
      {"plain text: ok", "plain text: ok"},
      {"\x1b]0;owned\x07\x1b[2J", "\\x1b]0;owned\\x07\\x1b[2J"},  // set the title, clear the screen
      {"two\nlines\r\tx", "two\\x0alines\\x0d\\x09x"},
      {"nul\0byte"s, "nul\\x00byte"},
      {"del\x7f", "del\\x7f"},
      {"csi \xC2\x9B" "31m", "csi \\xc2\\x9b31m"},  // U+009B, a one-character CSI
      {"bad \xFF\xC3", "bad \\xff\\xc3"},
      {"caf\xC3\xA9 \xE2\x82\xAC", "caf\xC3\xA9 \xE2\x82\xAC"},  // valid UTF-8 stays
      {"back\\slash", "back\\\\slash"},
  };
  for (const auto& [raw, inert] : cases) {
    INFO(raw);
    CHECK(inert_text(raw) == inert);
  }
}

TEST_CASE("inert_text caps the length at a character's start and says how much was cut", "[unit][common]") {
  CHECK(inert_text(std::string(10, 'a'), 4) == "aaaa ... (6 more bytes)");
  CHECK(inert_text("ab\xC3\xA9", 3) == "ab ... (2 more bytes)");  // é is not split
  CHECK(inert_text("abc", 3) == "abc");
  CHECK(inert_text(std::string(1 << 20, '\x1b')).size() < 5000);
}
