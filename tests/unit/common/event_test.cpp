#include "common/event.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>

#include <catch2/catch.hpp>

#include <vector>

namespace asio = boost::asio;
using exedev::detail::Event;

namespace {

// Waits on `event` once, then records that it woke.
asio::awaitable<void> wait_once(Event& event, int& woken) {
  co_await event.wait();
  ++woken;
}

// Waits on `event` once, then records which waiter it was.
asio::awaitable<void> wait_in_line(Event& event, std::vector<int>& order, int me) {
  co_await event.wait();
  order.push_back(me);
}

}  // namespace

TEST_CASE("Event::notify wakes every waiter at once, and only waiters", "[unit][common]") {
  asio::io_context ioc;
  Event event;
  int woken = 0;
  event.notify();  // nobody waits: not remembered
  for (int i = 0; i < 3; ++i) asio::co_spawn(ioc, wait_once(event, woken), asio::detached);
  ioc.poll();
  CHECK(woken == 0);
  event.notify();
  ioc.poll();
  CHECK(woken == 3);
  ioc.restart();  // it ran out of work
  asio::co_spawn(ioc, wait_once(event, woken), asio::detached);
  ioc.poll();
  CHECK(woken == 3);
  event.notify();
  ioc.run();
  CHECK(woken == 4);
}

TEST_CASE("Event::notify_one wakes the longest waiter only, and is not remembered", "[unit][common]") {
  asio::io_context ioc;
  Event event;
  std::vector<int> order;
  event.notify_one();  // nobody waits: not remembered
  for (int i = 0; i < 3; ++i) asio::co_spawn(ioc, wait_in_line(event, order, i), asio::detached);
  ioc.poll();
  CHECK(order.empty());
  event.notify_one();
  ioc.poll();
  CHECK(order == std::vector<int>{0});
  event.notify_one();
  event.notify_one();
  ioc.poll();
  CHECK(order == std::vector<int>{0, 1, 2});
}

TEST_CASE("Event::wait_until returns at its deadline without a notify", "[unit][common]") {
  asio::io_context ioc;
  Event event;
  bool returned = false;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        co_await event.wait_until(Event::Clock::now());
        returned = true;
      },
      asio::detached);
  ioc.run();
  CHECK(returned);
}

TEST_CASE("a cancelled Event wait returns and leaves the cancellation in the caller's state", "[unit][common]") {
  asio::io_context ioc;
  Event event;
  asio::cancellation_signal cancel;
  bool cancelled = false;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        co_await asio::this_coro::throw_if_cancelled(false);
        co_await event.wait();
        cancelled = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
      },
      asio::bind_cancellation_slot(cancel.slot(), asio::detached));
  ioc.poll();
  CHECK_FALSE(cancelled);
  cancel.emit(asio::cancellation_type::terminal);
  ioc.run();
  CHECK(cancelled);
}
