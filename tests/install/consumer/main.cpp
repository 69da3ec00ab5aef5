// Uses the package the way a user does: public headers only, linked through exedev:: targets.
#include <exedev/testing/run.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <iostream>

int main() {
  namespace asio = boost::asio;
  int value = exedev::testing::run([](asio::any_io_executor ex) -> asio::awaitable<int> {
    asio::steady_timer timer(ex, std::chrono::milliseconds(1));
    co_await timer.async_wait(asio::use_awaitable);
    co_return 7;
  });
  if (value != 7) return 1;
  std::cout << "consumer ok\n";
  return 0;
}
