#include <exedev/testing/run.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <stdexcept>
#include <string>

namespace exedev::testing {

namespace {
std::string seconds_text(std::chrono::milliseconds ms) {
  return std::to_string(static_cast<double>(ms.count()) / 1000.0) + " s";
}
}  // namespace

void run_coroutine(const std::function<boost::asio::awaitable<void>(boost::asio::any_io_executor)>& body,
                   RunLimits limits) {
  boost::asio::io_context io;
  boost::asio::cancellation_signal cancel;
  bool done = false;
  std::exception_ptr error;
  boost::asio::co_spawn(io, body(io.get_executor()),
                        boost::asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
                          done = true;
                          error = e;
                        }));

  const auto deadline = std::chrono::steady_clock::now() + limits.deadline;
  while (!done && std::chrono::steady_clock::now() < deadline && !io.stopped()) {
    io.run_one_until(deadline);
  }
  if (!done) {
    // Give the coroutine a chance to unwind through its cancellation paths, so the failure
    // is the hang and not a crash from destroying live operations.
    cancel.emit(boost::asio::cancellation_type::terminal);
    io.restart();
    io.run_for(limits.settle);
    throw std::runtime_error("test coroutine did not finish within " + seconds_text(limits.deadline));
  }
  if (error) std::rethrow_exception(error);

  io.restart();
  const auto settle_until = std::chrono::steady_clock::now() + limits.settle;
  while (!io.stopped() && std::chrono::steady_clock::now() < settle_until) {
    io.run_one_until(settle_until);
  }
  if (!io.stopped()) {
    throw std::runtime_error("test coroutine returned but left work running on its io_context for " +
                             seconds_text(limits.settle));
  }
}

}  // namespace exedev::testing
