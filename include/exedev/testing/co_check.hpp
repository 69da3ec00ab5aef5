#pragma once
// Catch2 assertions for coroutine code. Catch2 also evaluates an assertion's expression inside
// __builtin_constant_p, and GCC 12 runs a co_await there too, so an operation would run several
// times. These macros evaluate the expression once.

#include <catch2/catch.hpp>

#define CO_ASSERT_ONCE(macro, ...)                                    \
  do {                                                                \
    const bool exedev_assert_value_ = static_cast<bool>(__VA_ARGS__); \
    INFO(#__VA_ARGS__);                                               \
    macro(exedev_assert_value_);                                      \
  } while (false)
#define CO_CHECK(...) CO_ASSERT_ONCE(CHECK, __VA_ARGS__)
#define CO_CHECK_FALSE(...) CO_ASSERT_ONCE(CHECK_FALSE, __VA_ARGS__)
#define CO_REQUIRE(...) CO_ASSERT_ONCE(REQUIRE, __VA_ARGS__)
#define CO_REQUIRE_FALSE(...) CO_ASSERT_ONCE(REQUIRE_FALSE, __VA_ARGS__)
