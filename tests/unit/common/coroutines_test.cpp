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
