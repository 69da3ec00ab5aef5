#include "common/exceptions.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

using exedev::detail::exception_as;
using exedev::detail::throw_nested;

TEST_CASE("exception_as finds the held exception by its type or a base, else nothing", "[unit][common]") {
  const auto missing = std::make_exception_ptr(
      std::filesystem::filesystem_error("open", std::make_error_code(std::errc::no_such_file_or_directory)));
  const auto* as_itself = exception_as<std::filesystem::filesystem_error>(missing);
  REQUIRE(as_itself != nullptr);
  CHECK(as_itself->code() == std::errc::no_such_file_or_directory);
  const auto* as_base = exception_as<std::exception>(missing);
  REQUIRE(as_base != nullptr);
  CHECK(static_cast<const void*>(as_base) == static_cast<const void*>(as_itself));  // the one object
  CHECK(exception_as<std::invalid_argument>(missing) == nullptr);
  CHECK(exception_as<std::exception>(std::make_exception_ptr(42)) == nullptr);
  CHECK(exception_as<std::exception>(nullptr) == nullptr);
}

TEST_CASE("the object exception_as points to lives as long as the exception_ptr", "[unit][common]") {
  std::exception_ptr held;
  const std::runtime_error* seen = nullptr;
  {
    const auto captured = std::make_exception_ptr(std::runtime_error("the first failure"));
    held = captured;
    seen = exception_as<std::runtime_error>(captured);
  }
  REQUIRE(seen != nullptr);
  CHECK(std::string(seen->what()) == "the first failure");
  CHECK(exception_as<std::runtime_error>(held) == seen);
}

TEST_CASE("throw_nested throws the new error with the cause nested", "[unit][common]") {
  const auto cause = std::make_exception_ptr(std::runtime_error("the cause"));
  try {
    throw_nested(cause, std::logic_error("the error"));
    FAIL("throw_nested returned");
  } catch (const std::logic_error& e) {
    CHECK(std::string(e.what()) == "the error");
    const auto* nested = dynamic_cast<const std::nested_exception*>(&e);
    REQUIRE(nested != nullptr);
    CHECK(exception_as<std::runtime_error>(nested->nested_ptr()) == exception_as<std::runtime_error>(cause));
  }
}
