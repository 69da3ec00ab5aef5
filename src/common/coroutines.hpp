#pragma once
// Small coroutine helpers every layer's implementation (and the tests) needs. Internal: Asio
// only, header-only, never installed.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/cancellation_state.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "common/exceptions.hpp"

#include <chrono>
#include <exception>
#include <utility>

namespace exedev::detail {

/// Rethrows the first failure, in completion order, of an experimental::parallel_group: `order`
/// is the group's completion order, `errors` its operations' exception_ptrs by index (awaited
/// with wait_for_one_error, the others were cancelled because of that one).
template <typename Order, typename Errors>
void rethrow_first_failure(const Order& order, const Errors& errors) {
  for (const auto index : order) {
    if (errors[index]) std::rethrow_exception(errors[index]);
  }
}

/// Whether `error` is a cancellation (a system_error with operation_aborted).
inline bool is_cancellation(const std::exception_ptr& error) {
  const auto* system_error = exception_as<boost::system::system_error>(error);
  return system_error != nullptr && system_error->code() == boost::asio::error::operation_aborted;
}

/// Whether a coroutine's cancellation state records a cancellation. Await the state into a
/// named value first (`const auto state = co_await boost::asio::this_coro::cancellation_state;
/// if (was_cancelled(state)) ...`): GCC 12 miscompiles a co_await in an if condition (ADR 7).
[[nodiscard]] inline bool was_cancelled(const boost::asio::cancellation_state& state) {
  return state.cancelled() != boost::asio::cancellation_type::none;
}

/// Throws a cancellation (a system_error with operation_aborted), with `cause` nested when
/// there is one.
[[noreturn]] inline void throw_cancelled(std::exception_ptr cause = nullptr) {
  boost::system::system_error cancelled(boost::asio::error::operation_aborted);
  if (cause) throw_nested(std::move(cause), cancelled);
  throw cancelled;
}

/// Throws a cancellation (throw_cancelled) when the calling coroutine's cancellation state
/// records one: the check after a wait that a cancellation does not end by itself (an Event's),
/// and in a coroutine that turned throw_if_cancelled off. With throw_if_cancelled on, Asio
/// raises the same operation_aborted at this co_await already. A cleanup before the throw, or
/// a cause to nest, needs the state read by hand (was_cancelled).
inline boost::asio::awaitable<void> throw_if_cancelled() {
  // The state named first: GCC 12 mishandles a throw's temporaries in a statement that awaits.
  const auto state = co_await boost::asio::this_coro::cancellation_state;
  if (was_cancelled(state)) throw_cancelled();
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
/// awaits this through EXEDEV_AWAIT_DESPITE_CANCELLATION (Asio refuses to start an awaitable in
/// a cancelled coroutine otherwise).
template <typename T>
boost::asio::awaitable<T> shielded(boost::asio::awaitable<T> op) {
  namespace asio = boost::asio;
  const auto executor = co_await asio::this_coro::executor;
  co_return co_await asio::co_spawn(executor, std::move(op),
                                    asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
}

}  // namespace exedev::detail

/// Awaits `op` (an awaitable) to its end even when the calling coroutine has been cancelled, and
/// declares `failure`, a std::exception_ptr to what `op` threw (null when it returned). The
/// caller's throw_if_cancelled setting is put back afterwards, so a cancellation is still raised
/// at its next co_await. A macro, not a coroutine: Asio refuses every co_await in a cancelled
/// coroutine while throw_if_cancelled is on, the co_await of a helper coroutine included, so the
/// switch must happen in the caller's own frame. `op` is made into a named task before any
/// co_await (whatever aggregate or conditional it builds is then no temporary of a co_await
/// expression, which GCC 12 destroys twice: README "Compilers"), so a lambda's coroutine must
/// take what it uses as parameters: captures would die with the closure, a temporary.
#define EXEDEV_AWAIT_DESPITE_CANCELLATION(failure, op)                                               \
  auto failure##_task = op;                                                                          \
  const bool failure##_throw_if_cancelled = co_await ::boost::asio::this_coro::throw_if_cancelled(); \
  co_await ::boost::asio::this_coro::throw_if_cancelled(false);                                      \
  const ::std::exception_ptr failure = co_await ::exedev::detail::capture(::std::move(failure##_task)); \
  co_await ::boost::asio::this_coro::throw_if_cancelled(failure##_throw_if_cancelled)
