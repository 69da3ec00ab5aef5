#pragma once
// SshProcess: an `ssh` command of the emulator, running as a child process in its own process
// group, its output pipe and pidfd read on the server's io_context. Asio only (no Beast), so it
// compiles apart from the HTTP server.

#include "emulator/lobby.hpp"

#include "common/event.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace exedev::emulator {

// Two coroutines own it (through shared_ptr) until it is over: `pump` reads the output pipe and
// `reap` waits on the pidfd. A session consumes the pending output; once the session is gone
// (client left, time limit) the output is discarded but the process keeps being drained and
// reaped.
class SshProcess : public std::enable_shared_from_this<SshProcess> {
 public:
  using Clock = std::chrono::steady_clock;

  SshProcess(boost::asio::io_context& ioc, pid_t pid, int out_fd, int pid_fd);

  /// Starts `plan.line` under `login_shell -c` in the VM's home. Throws std::system_error when
  /// it cannot start (the lobby answers 422: nothing ran).
  static std::shared_ptr<SshProcess> spawn(boost::asio::io_context& ioc, const SshPlan& plan,
                                           const std::string& login_shell);

  bool finished() const { return eof_ && exit_code_.has_value(); }
  std::optional<int> exit_code() const { return exit_code_; }
  bool has_output() const { return !pending_.empty(); }

  std::string take_output();
  /// The consumer stops listening: output from now on is discarded.
  void detach();
  void kill_group();
  /// Waits until something changes (output, EOF, exit) or `deadline`.
  boost::asio::awaitable<void> wait(Clock::time_point deadline);
  /// Kills and reaps the process if it still runs (server shutdown, on the caller's thread).
  void terminate_now();

 private:
  void notify() { changed_.notify(); }
  boost::asio::awaitable<void> pump(std::shared_ptr<SshProcess> keep_alive);
  boost::asio::awaitable<void> reap(std::shared_ptr<SshProcess> keep_alive);

  pid_t pid_;
  boost::asio::posix::stream_descriptor out_;
  boost::asio::posix::stream_descriptor pidfd_;
  detail::Event changed_;
  detail::Event space_freed_;
  boost::asio::steady_timer grace_;
  std::string pending_;
  bool attached_ = true;
  bool eof_ = false;
  std::optional<int> exit_code_;
};

}  // namespace exedev::emulator
