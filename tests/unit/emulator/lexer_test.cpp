#include "emulator/lexer.hpp"

#include <catch2/catch.hpp>

using exedev::emulator::lex;
using exedev::emulator::trim_space;
using Words = std::vector<std::string>;

namespace {
Words words(std::string_view line) {
  auto result = lex(line);
  REQUIRE_FALSE(result.error);
  return result.words;
}
}  // namespace

TEST_CASE("lexer: whitespace, including newlines and Unicode spaces, separates words", "[lexer]") {
  CHECK(words("a b\tc\nd\r\ne") == Words{"a", "b", "c", "d", "e"});
  CHECK(words("  lead  trail  ") == Words{"lead", "trail"});
  CHECK(words("a\u00a0b\u3000c\u2003d\u0085e") == Words{"a", "b", "c", "d", "e"});
}

TEST_CASE("lexer: no command chaining and no comments", "[lexer]") {
  CHECK(words("ls; rm x && echo y") == Words{"ls;", "rm", "x", "&&", "echo", "y"});
  CHECK(words("a #b # c") == Words{"a", "#b", "#", "c"});
}

TEST_CASE("lexer: single quotes are literal", "[lexer]") {
  CHECK(words(R"('a "b" \c $d')") == Words{R"(a "b" \c $d)"});
  CHECK(words(R"('it'\''s')") == Words{"it's"});
}

TEST_CASE("lexer: double quotes only unescape \\\" and \\\\", "[lexer]") {
  CHECK(words(R"("a\"b")") == Words{R"(a"b)"});
  CHECK(words(R"("a\\b")") == Words{R"(a\b)"});
  CHECK(words(R"("a\nb")") == Words{R"(a\nb)"});
  CHECK(words(R"("a\'b")") == Words{R"(a\'b)"});
  CHECK(words(R"("$HOME `x` !")") == Words{"$HOME `x` !"});
}

TEST_CASE("lexer: backslash outside quotes escapes any character", "[lexer]") {
  CHECK(words(R"(a\ b)") == Words{"a b"});
  CHECK(words(R"(\'x\")") == Words{R"('x")"});
  CHECK(words(R"(\\)") == Words{R"(\)"});
  CHECK(words("\\\n") == Words{"\n"});
}

TEST_CASE("lexer: adjacent pieces join into one word", "[lexer]") {
  CHECK(words("--name='a b'") == Words{"--name=a b"});
  CHECK(words(R"(a"b"'c'd)") == Words{"abcd"});
}

TEST_CASE("lexer: empty words are dropped", "[lexer]") {
  CHECK(words(R"(comment my-vm "")") == Words{"comment", "my-vm"});
  CHECK(words("''").empty());
  CHECK(words("'' x \"\"") == Words{"x"});
  CHECK(words("a''b") == Words{"ab"});
}

TEST_CASE("lexer: syntax errors", "[lexer]") {
  CHECK(lex("'abc").error == "No closing quotation");
  CHECK(lex("x \"abc").error == "No closing quotation");
  CHECK(lex("abc\\").error == "No escaped character");
  CHECK(lex("\"abc\\").error == "No escaped character");
  CHECK(lex("'abc").words.empty());
}

TEST_CASE("lexer: invalid UTF-8 bytes become U+FFFD as Go's rune reader makes them", "[lexer]") {
  CHECK(words("a\xff" "b") == Words{"a\xEF\xBF\xBD" "b"});
  CHECK(words("caf\xC3\xA9") == Words{"caf\xC3\xA9"});
}

TEST_CASE("trim_space trims Unicode white space like strings.TrimSpace", "[lexer]") {
  CHECK(trim_space(" \t\n ls \r\n") == "ls");
  CHECK(trim_space("\u00a0ls\u3000") == "ls");
  CHECK(trim_space("ls\xff") == "ls\xff");
  CHECK(trim_space(" \n ").empty());
}
