#include "common/event.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>

namespace exedev::detail {

namespace asio = boost::asio;

void Event::notify() {
  for (const auto& timer : waiters_) timer->cancel();
  waiters_.clear();
}

void Event::notify_one() {
  if (waiters_.empty()) return;
  waiters_.front()->cancel();
  waiters_.erase(waiters_.begin());
}

asio::awaitable<void> Event::wait_until(Clock::time_point deadline) {
  // The executor is named first: GCC 12 destroys a temporary inside a co_await expression's
  // arguments twice (README, "Compilers").
  const auto executor = co_await asio::this_coro::executor;
  const auto timer = std::make_shared<asio::steady_timer>(executor, deadline);
  waiters_.push_back(timer);
  boost::system::error_code ignored;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  std::erase(waiters_, timer);
}

}  // namespace exedev::detail
