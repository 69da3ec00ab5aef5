// The coroutine test runner must turn hangs, throws and leaked work into test failures.
#include <catch2/catch.hpp>

#include <exedev/testing/run.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <stdexcept>

using exedev::testing::run;
using exedev::testing::RunLimits;
using namespace std::chrono_literals;
namespace asio = boost::asio;

TEST_CASE("run returns the coroutine's value") {
  auto value = run([](asio::any_io_executor ex) -> asio::awaitable<int> {
    asio::steady_timer timer(ex, 1ms);
    co_await timer.async_wait(asio::use_awaitable);
    co_return 42;
  });
  CHECK(value == 42);
}

TEST_CASE("run rethrows what the coroutine threw") {
  CHECK_THROWS_WITH(run([](asio::any_io_executor) -> asio::awaitable<void> {
                      throw std::logic_error("boom");
                      co_return;
                    }),
                    "boom");
}

TEST_CASE("run fails a coroutine that hangs, after cancelling it") {
  bool cancelled = false;
  CHECK_THROWS_WITH(run(
                        [&](asio::any_io_executor ex) -> asio::awaitable<void> {
                          asio::steady_timer timer(ex, 1h);
                          try {
                            co_await timer.async_wait(asio::use_awaitable);
                          } catch (const boost::system::system_error&) {
                            cancelled = true;
                            throw;
                          }
                        },
                        RunLimits{.deadline = 100ms, .settle = 1s}),
                    Catch::Contains("did not finish"));
  CHECK(cancelled);
}

TEST_CASE("run fails when the coroutine leaves work behind") {
  CHECK_THROWS_WITH(run(
                        [](asio::any_io_executor ex) -> asio::awaitable<void> {
                          // Only the pending handler owns the timer, so the io_context's
                          // shutdown destroys both (a timer outliving its context is UB).
                          auto leaked = std::make_shared<asio::steady_timer>(ex, 1h);
                          leaked->async_wait([leaked](boost::system::error_code) {});
                          co_return;
                        },
                        RunLimits{.deadline = 1s, .settle = 100ms}),
                    Catch::Contains("left work running"));
}
