// B1 floor: the least a coroutine program on Asio compiles: an awaitable, an io_context and
// co_spawn. A consumer of exedev pays this anyway.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

namespace asio = boost::asio;

asio::awaitable<int> answer() { co_return 42; }

asio::awaitable<void> program() {
  const int value = co_await answer();
  (void)value;
}

int main() {
  asio::io_context io;
  asio::co_spawn(io, program(), asio::detached);
  io.run();
}
