#include "emulator/ssh_process.hpp"

#include "emulator/processes.hpp"

#include "common/subprocess.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <csignal>
#include <system_error>
#include <utility>

namespace exedev::emulator {

namespace asio = boost::asio;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t max_pending_output = 1 << 20;  // pause reading a child beyond this
constexpr auto exit_drain_grace = std::chrono::seconds(1);

}  // namespace

SshProcess::SshProcess(asio::io_context& ioc, pid_t pid, int out_fd, int pid_fd)
    : pid_(pid), out_(ioc, out_fd), pidfd_(ioc, pid_fd), grace_(ioc) {}

std::shared_ptr<SshProcess> SshProcess::spawn(asio::io_context& ioc, const SshPlan& plan,
                                              const std::string& login_shell) {
  detail::SpawnRequest request;
  request.program = login_shell;
  request.argv = {login_shell, "-c", plan.line};
  request.environment = vm_environment(plan.vm_id, plan.vm, plan.home, plan.env, login_shell);
  request.directory = plan.home.string();
  request.grouping = detail::ProcessGrouping::new_group;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  request.stdout_fd = pipe_fds[1];
  request.stderr_fd = pipe_fds[1];
  // A login shell or home that cannot be used is refused (422 "failed to start command"), as a
  // failed fork is: nothing ran.
  const auto started = detail::spawn_process(request);
  ::close(pipe_fds[1]);
  if (started.error != 0) {
    ::close(pipe_fds[0]);
    throw std::system_error(started.error, std::generic_category(), "cannot start " + login_shell);
  }
  const pid_t pid = started.pid;
  int pid_fd = -1;
  try {
    pid_fd = detail::open_pidfd(pid);
  } catch (...) {
    detail::kill_and_reap_now(pid);
    ::close(pipe_fds[0]);
    throw;
  }
  auto process = std::make_shared<SshProcess>(ioc, pid, pipe_fds[0], pid_fd);
  asio::co_spawn(ioc, process->pump(process), asio::detached);
  asio::co_spawn(ioc, process->reap(process), asio::detached);
  return process;
}

std::string SshProcess::take_output() {
  std::string out;
  out.swap(pending_);
  space_freed_.notify();
  return out;
}

void SshProcess::detach() {
  attached_ = false;
  pending_.clear();
  space_freed_.notify();
}

void SshProcess::kill_group() { detail::kill_process_group(pid_); }

asio::awaitable<void> SshProcess::wait(Clock::time_point deadline) {
  co_await changed_.wait_until(deadline);
}

void SshProcess::terminate_now() {
  if (exit_code_) return;
  detail::kill_and_reap_now(pid_);
  exit_code_ = 128 + SIGKILL;
}

asio::awaitable<void> SshProcess::pump(std::shared_ptr<SshProcess> /*keep_alive*/) {
  std::array<char, 64 * 1024> buffer;
  while (true) {
    while (attached_ && pending_.size() >= max_pending_output) {
      co_await space_freed_.wait();
    }
    const auto [ec, n] = co_await out_.async_read_some(asio::buffer(buffer), use_tuple);
    if (n > 0 && attached_) pending_.append(buffer.data(), n);
    if (ec) break;
    notify();
  }
  boost::system::error_code ignored;
  out_.close(ignored);
  eof_ = true;
  notify();
}

asio::awaitable<void> SshProcess::reap(std::shared_ptr<SshProcess> /*keep_alive*/) {
  const auto status = co_await detail::reap_when_exited(pidfd_, pid_);
  exit_code_ = status ? detail::exit_code_of(*status) : 255;  // 255: no exit status, as ssh says
  boost::system::error_code ignored;
  pidfd_.close(ignored);
  notify();
  // A background process that kept the output pipe open must not hold the response forever.
  if (!eof_) {
    grace_.expires_after(exit_drain_grace);
    co_await grace_.async_wait(use_tuple);
    if (!eof_) out_.cancel(ignored);
  }
}

}  // namespace exedev::emulator
