// Expected values of sh_quote_if_needed were produced by Python 3's shlex.quote.
#include "common/shell_quote.hpp"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstdio>
#include <string>

using namespace exedev::detail;

TEST_CASE("sh_single_quote always quotes and escapes single quotes", "[unit][common]") {
  CHECK(sh_single_quote("") == "''");
  CHECK(sh_single_quote("abc") == "'abc'");
  CHECK(sh_single_quote("it's") == "'it'\"'\"'s'");
  CHECK(sh_single_quote("''") == "''\"'\"''\"'\"''");
  CHECK(sh_single_quote("$HOME `x` \\ \"") == "'$HOME `x` \\ \"'");
}

TEST_CASE("sh_quote_if_needed matches shlex.quote", "[unit][common]") {
  CHECK(sh_quote_if_needed("") == "''");
  CHECK(sh_quote_if_needed("abc") == "abc");
  CHECK(sh_quote_if_needed("@%+=:,./-_x9") == "@%+=:,./-_x9");
  CHECK(sh_quote_if_needed("a b") == "'a b'");
  CHECK(sh_quote_if_needed("it's") == "'it'\"'\"'s'");
  CHECK(sh_quote_if_needed("a\nb") == "'a\nb'");
  CHECK(sh_quote_if_needed("\xC3\xBC") == "'\xC3\xBC'");
}

TEST_CASE("a quoted word reaches /bin/sh unchanged", "[unit][common]") {
  for (const std::string word : {"plain", "it's", "a 'b' \"c\"", "$(echo no) `no` \\n *", "'", "\t\n"}) {
    const std::string command = "printf '%s' " + sh_single_quote(word) + " " + sh_quote_if_needed(word);
    FILE* shell = ::popen(command.c_str(), "r");
    REQUIRE(shell != nullptr);
    std::string output;
    char buffer[256];
    while (const auto n = std::fread(buffer, 1, sizeof buffer, shell)) output.append(buffer, n);
    CHECK(::pclose(shell) == 0);
    CHECK(output == word + word);
  }
}
