#include "common/coroutines.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>

namespace asio = boost::asio;

namespace {

// Cleanup that needs the executor: it cannot even start in a cancelled coroutine unless
// throw_if_cancelled is off.
asio::awaitable<void> cleanup(bool& ran, bool fail) {
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  ran = true;
  if (fail) throw std::runtime_error("cleanup failed");
}

struct Outcome {
  bool cleaned = false;
  bool failure_seen = false;
  bool raised_after = false;  // the next co_await raised the cancellation
};

asio::awaitable<void> cancelled_then_cleanup(asio::cancellation_signal& cancel, Outcome& outcome, bool fail) {
  cancel.emit(asio::cancellation_type::terminal);  // this very coroutine
  EXEDEV_AWAIT_DESPITE_CANCELLATION(failure, cleanup(outcome.cleaned, fail));
  outcome.failure_seen = failure != nullptr;
  try {
    co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  } catch (const boost::system::system_error& e) {
    outcome.raised_after = e.code() == asio::error::operation_aborted;
  }
}

Outcome run(bool fail) {
  asio::io_context ioc;
  asio::cancellation_signal cancel;
  Outcome outcome;
  asio::co_spawn(ioc, cancelled_then_cleanup(cancel, outcome, fail),
                 asio::bind_cancellation_slot(cancel.slot(), [](std::exception_ptr) {}));
  ioc.run();
  return outcome;
}

}  // namespace

TEST_CASE("cleanup awaited despite cancellation runs, then the cancellation is raised again", "[unit][common]") {
  const auto outcome = run(false);
  CHECK(outcome.cleaned);
  CHECK_FALSE(outcome.failure_seen);
  CHECK(outcome.raised_after);
}

TEST_CASE("what the cleanup threw is handed back, not thrown", "[unit][common]") {
  const auto outcome = run(true);
  CHECK(outcome.cleaned);
  CHECK(outcome.failure_seen);
  CHECK(outcome.raised_after);
}

namespace {

// Awaits throw_if_cancelled() with Asio's own throw_if_cancelled set to `asio_throws`, after
// cancelling itself when `cancelled`; what it threw goes to `thrown`.
asio::awaitable<void> check_cancellation(asio::cancellation_signal& cancel, bool cancelled, bool asio_throws,
                                         std::exception_ptr& thrown) {
  co_await asio::this_coro::throw_if_cancelled(asio_throws);
  if (cancelled) cancel.emit(asio::cancellation_type::terminal);  // this very coroutine
  try {
    co_await exedev::detail::throw_if_cancelled();
  } catch (...) {
    thrown = std::current_exception();
  }
  // Cleared before the end: with Asio's check on, the cancellation still recorded is otherwise
  // thrown again after this coroutine ends, out of io_context::run (Asio 1.81's co_spawn).
  co_await asio::this_coro::reset_cancellation_state();
}

// What came of it: nullptr when it returned.
std::exception_ptr cancellation_check(bool cancelled, bool asio_throws) {
  asio::io_context ioc;
  asio::cancellation_signal cancel;
  std::exception_ptr thrown;
  bool finished = false;
  asio::co_spawn(ioc, check_cancellation(cancel, cancelled, asio_throws, thrown),
                 asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr error) {
                   if (error) thrown = error;
                   finished = true;
                 }));
  ioc.run();
  REQUIRE(finished);
  return thrown;
}

}  // namespace

TEST_CASE("throw_if_cancelled raises operation_aborted exactly when the coroutine was cancelled", "[unit][common]") {
  for (const bool asio_throws : {true, false}) {
    CAPTURE(asio_throws);
    CHECK(cancellation_check(false, asio_throws) == nullptr);
    const auto thrown = cancellation_check(true, asio_throws);
    REQUIRE(thrown != nullptr);
    CHECK(exedev::detail::is_cancellation(thrown));
  }
}
