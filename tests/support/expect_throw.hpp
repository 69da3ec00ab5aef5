#pragma once
// The tests' one way to expect a coroutine to throw: awaits the task, fails the test unless it
// threw E, and returns a copy of the error for further checks. Header-only (Catch2, Asio).

#include <boost/asio/awaitable.hpp>

#include <catch2/catch.hpp>

#include <exception>
#include <stdexcept>
#include <utility>

namespace exedev::testing_support {

/// Runs `task`, expecting it to throw E; returns a copy (its message is an UNSCOPED_INFO, shown
/// with the next failing check).
template <typename E, typename T>
boost::asio::awaitable<E> expect_throw(boost::asio::awaitable<T> task) {
  std::exception_ptr failure;
  try {
    co_await std::move(task);
  } catch (...) {
    failure = std::current_exception();
  }
  REQUIRE(failure);
  try {
    std::rethrow_exception(failure);
  } catch (const E& e) {
    UNSCOPED_INFO(e.what());
    co_return e;
  } catch (const std::exception& e) {
    FAIL("unexpected exception: " << e.what());
  }
  throw std::logic_error("unreachable");
}

}  // namespace exedev::testing_support
