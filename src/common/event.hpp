#pragma once
// An awaitable event for coroutines of one strand waiting on a condition: a waiter checks its
// condition, waits, and checks again after each wake-up. Internal.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <memory>
#include <vector>

namespace exedev::detail {

class Event {
 public:
  using Clock = std::chrono::steady_clock;

  /// Wakes every coroutine waiting now. A notify with no waiter is not remembered.
  void notify();
  /// Wakes the coroutine that has waited longest (a hand-off: a freed slot, a released lock).
  /// A waiter that finds itself cancelled on waking passes the wake-up on with notify_one().
  void notify_one();

  /// Returns at the next notify(), at `deadline`, or when the waiter is cancelled (a
  /// cancellation shows in the caller's cancellation state, never as an exception here).
  boost::asio::awaitable<void> wait_until(Clock::time_point deadline);
  boost::asio::awaitable<void> wait() { return wait_until(Clock::time_point::max()); }

 private:
  // One timer per waiter, so that waiters with different deadlines never disturb each other.
  std::vector<std::shared_ptr<boost::asio::steady_timer>> waiters_;
};

}  // namespace exedev::detail
