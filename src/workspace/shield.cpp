#include "workspace/shield.hpp"

#include "common/coroutines.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>

#include <exedev/workspace/errors.hpp>

namespace exedev::workspace::detail {

namespace asio = boost::asio;
using exedev::detail::capture;

namespace {

Task<void> bounded(Task<void> op, std::chrono::steady_clock::duration limit) {
  using namespace asio::experimental::awaitable_operators;
  asio::steady_timer timer(co_await asio::this_coro::executor, limit);
  auto outcome = co_await (capture(std::move(op)) || timer.async_wait(asio::use_awaitable));
  if (outcome.index() == 1) {
    throw WorkspaceTimeoutError("cleanup did not finish within its time limit", PartialOutput{});
  }
  if (auto error = std::get<0>(outcome)) std::rethrow_exception(error);
}

}  // namespace

Task<void> run_shielded(Task<void> op, std::chrono::steady_clock::duration limit) {
  co_await exedev::detail::shielded(bounded(std::move(op), limit));
}

}  // namespace exedev::workspace::detail
