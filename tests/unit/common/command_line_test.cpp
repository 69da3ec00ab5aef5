#include "common/command_line.hpp"

#include <catch2/catch.hpp>

using namespace exedev::detail;

TEST_CASE("split_flag separates the name from a value after the first '='", "[unit][common]") {
  const auto with_value = split_flag("--env=A=b c");
  CHECK(with_value.name == "--env");
  CHECK(with_value.value == std::string("A=b c"));
  const auto bare = split_flag("--help");
  CHECK(bare.name == "--help");
  CHECK_FALSE(bare.value.has_value());
  const auto empty = split_flag("--name=");
  CHECK(empty.name == "--name");
  CHECK(empty.value == std::string());
}

TEST_CASE("parse_number accepts only a number written in full", "[unit][common]") {
  CHECK(parse_number("1.5") == 1.5);
  CHECK(parse_number("-2") == -2.0);
  CHECK(parse_number("1e3") == 1000.0);
  for (const char* bad : {"", "x", "1.5s", "1 2", "1e999"}) {
    INFO(bad);
    CHECK_FALSE(parse_number(bad).has_value());
  }
}
