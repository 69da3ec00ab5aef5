#pragma once
// Small coroutine helpers every layer's implementation (and the tests) needs. Internal: Asio
// only, header-only, never installed.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <chrono>
#include <exception>
#include <utility>

namespace exedev::detail {

/// Whether `error` is a cancellation (a system_error with operation_aborted).
inline bool is_cancellation(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    return e.code() == boost::asio::error::operation_aborted;
  } catch (...) {
    return false;
  }
}

/// Waits `delay` on the current executor; cancellable like any timer wait.
inline boost::asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration delay) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, delay);
  co_await timer.async_wait(boost::asio::use_awaitable);
}

/// Runs `op` and returns what it threw (nullptr when it returned). Never throws, so an
/// `operator||` over it completes as soon as either side does.
template <typename T>
boost::asio::awaitable<std::exception_ptr> capture(boost::asio::awaitable<T> op) {
  try {
    co_await std::move(op);
  } catch (...) {
    co_return std::current_exception();
  }
  co_return nullptr;
}

}  // namespace exedev::detail
