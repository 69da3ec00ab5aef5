#include "tools/path_lock.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace exedev::tools::detail {

namespace asio = boost::asio;

workspace::Task<PathLocks::Guard> PathLocks::acquire(std::string key) {
  auto& entry = entries_[key];
  ++entry.users;
  while (entry.held) {
    auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor,
                                                      asio::steady_timer::time_point::max());
    entry.waiters.push_back(timer);
    boost::system::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    // A release wakes a waiter by cancelling its timer; the caller's own cancellation shows in
    // the cancellation state.
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
      std::erase(entry.waiters, timer);
      if (--entry.users == 0 && !entry.held) entries_.erase(key);
      throw boost::system::system_error(asio::error::operation_aborted);
    }
  }
  entry.held = true;
  co_return Guard(this, std::move(key));
}

void PathLocks::release(const std::string& key) {
  auto found = entries_.find(key);
  if (found == entries_.end()) return;
  auto& entry = found->second;
  entry.held = false;
  if (--entry.users == 0) {
    entries_.erase(found);
    return;
  }
  if (!entry.waiters.empty()) {
    auto next = entry.waiters.front();
    entry.waiters.pop_front();
    next->cancel();
  }
}

}  // namespace exedev::tools::detail
