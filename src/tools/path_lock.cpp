#include "tools/path_lock.hpp"

#include "common/coroutines.hpp"

#include <boost/asio/this_coro.hpp>

namespace exedev::tools::detail {

namespace asio = boost::asio;

workspace::Task<PathLocks::Guard> PathLocks::acquire(std::string key) {
  auto& entry = entries_[key];
  ++entry.users;
  while (entry.held) {
    co_await entry.released.wait();
    // The caller's own cancellation shows in the cancellation state.
    // The state named first: GCC 12 mishandles a throw's temporaries in a statement that awaits.
    const auto cancellation = co_await asio::this_coro::cancellation_state;
    if (exedev::detail::was_cancelled(cancellation)) {
      if (--entry.users == 0 && !entry.held) {
        entries_.erase(key);
      } else if (!entry.held) {
        entry.released.notify_one();  // a release meant for this waiter goes to the next
      }
      exedev::detail::throw_cancelled();
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
  entry.released.notify_one();
}

}  // namespace exedev::tools::detail
