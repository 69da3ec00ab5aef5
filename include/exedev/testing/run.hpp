#pragma once
// Runs a test coroutine on a fresh io_context with a deadline, so that a hang fails the test
// instead of hanging CI.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <utility>

namespace exedev::testing {

using namespace std::chrono_literals;

struct RunLimits {
  /// How long the coroutine may take before it is cancelled and the run fails.
  std::chrono::milliseconds deadline = 30s;
  /// How long work the coroutine left behind (timers, sockets) may take to finish after it
  /// returned before the run fails for leaked work.
  std::chrono::milliseconds settle = 2s;
};

/// Runs `body(executor)` on a fresh io_context.
/// - Rethrows what the coroutine threw.
/// - Past the deadline, delivers a terminal cancellation, then throws std::runtime_error.
/// - After the coroutine returns, fails with std::runtime_error if the io_context still has
///   work once `settle` has passed (something was left running).
void run_coroutine(const std::function<boost::asio::awaitable<void>(boost::asio::any_io_executor)>& body,
                   RunLimits limits = {});

/// As run_coroutine, returning the coroutine's value.
template <typename Body>
auto run(Body&& body, RunLimits limits = {}) {
  using Awaitable = decltype(body(std::declval<boost::asio::any_io_executor>()));
  using Value = typename Awaitable::value_type;
  if constexpr (std::is_void_v<Value>) {
    run_coroutine([&](boost::asio::any_io_executor ex) { return body(std::move(ex)); }, limits);
  } else {
    std::optional<Value> result;
    run_coroutine(
        [&](boost::asio::any_io_executor ex) -> boost::asio::awaitable<void> {
          result.emplace(co_await body(std::move(ex)));
        },
        limits);
    return std::move(*result);
  }
}

}  // namespace exedev::testing
