#pragma once
// Small coroutine helpers every layer's implementation (and the tests) needs. Internal: Asio
// only, header-only, never installed.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
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

/// Runs `op` to completion whatever happens to the caller: `op` runs on a coroutine of its own
/// with no cancellation slot, so a cancellation of the caller is not forwarded to it (it stays
/// recorded in the caller's cancellation state). A caller that may already have been cancelled
/// must set `this_coro::throw_if_cancelled(false)` before co_awaiting this (Asio refuses to
/// start an awaitable in a cancelled coroutine otherwise) and restore it afterwards.
template <typename T>
boost::asio::awaitable<T> shielded(boost::asio::awaitable<T> op) {
  namespace asio = boost::asio;
  const auto executor = co_await asio::this_coro::executor;
  co_return co_await asio::co_spawn(executor, std::move(op),
                                    asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
}

}  // namespace exedev::detail
