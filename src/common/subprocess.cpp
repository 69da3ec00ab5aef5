#include "common/subprocess.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <system_error>
#include <unistd.h>

namespace exedev::detail {

namespace asio = boost::asio;

namespace {

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

SpawnResult spawn_process(const SpawnRequest& request) {
  auto argv = c_strings(request.argv);
  auto envp = c_strings(request.environment);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attributes);
  const int given[] = {request.stdin_fd, request.stdout_fd, request.stderr_fd};
  for (int target = 0; target < 3; ++target) {
    if (given[target] >= 0) {
      ::posix_spawn_file_actions_adddup2(&actions, given[target], target);
    } else {
      ::posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0);
    }
  }
  ::posix_spawn_file_actions_addchdir_np(&actions, request.directory.c_str());
  // Descriptors opened without O_CLOEXEC (by a library, or the embedding program) stay ours.
  ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  sigset_t none;
  sigset_t all;
  sigemptyset(&none);
  sigfillset(&all);
  ::posix_spawnattr_setsigmask(&attributes, &none);
  ::posix_spawnattr_setsigdefault(&attributes, &all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (request.grouping == ProcessGrouping::new_session) {
    flags |= POSIX_SPAWN_SETSID;
  } else {
    flags |= POSIX_SPAWN_SETPGROUP;
    ::posix_spawnattr_setpgroup(&attributes, 0);  // a group named after the child
  }
  ::posix_spawnattr_setflags(&attributes, flags);
  SpawnResult result;
  result.error = ::posix_spawn(&result.pid, request.program.c_str(), &actions, &attributes, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attributes);
  if (result.error != 0) result.pid = -1;
  return result;
}

int open_pidfd(pid_t pid) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "pidfd_open");
  return fd;
}

asio::awaitable<std::optional<int>> reap_when_exited(asio::posix::stream_descriptor& pidfd, pid_t pid) {
  using namespace std::chrono_literals;
  asio::steady_timer pause(co_await asio::this_coro::executor);
  boost::system::error_code ec;
  while (true) {
    co_await pidfd.async_wait(asio::posix::stream_descriptor::wait_read, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return std::nullopt;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) co_return status;
    // Readiness was reported before the exit (the reactor can deliver an event meant for an
    // earlier descriptor with the same number). Each wait re-polls the pidfd, so wait again,
    // pausing briefly so that repeated false reports cannot spin.
    pause.expires_after(5ms);
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return std::nullopt;
  }
}

bool kill_process_group(pid_t pid) {
  if (::killpg(pid, SIGKILL) == 0 || errno == ESRCH) return true;
  if (errno == EPERM) {
    ::kill(pid, SIGKILL);
    return false;
  }
  return true;
}

void kill_and_reap_now(pid_t pid) {
  ::killpg(pid, SIGKILL);
  ::kill(pid, SIGKILL);  // in case the group could not be signalled
  ::waitpid(pid, nullptr, 0);
}

ssize_t write_without_sigpipe(int fd, const void* data, std::size_t size) {
  sigset_t sigpipe;
  sigset_t previous_mask;
  sigemptyset(&sigpipe);
  sigaddset(&sigpipe, SIGPIPE);
  ::pthread_sigmask(SIG_BLOCK, &sigpipe, &previous_mask);
  // A SIGPIPE already pending is someone else's: it stays (a second one would merge into it).
  sigset_t pending;
  ::sigpending(&pending);
  const bool already_pending = sigismember(&pending, SIGPIPE) == 1;
  const ssize_t written = ::write(fd, data, size);
  const int error = errno;
  if (written < 0 && error == EPIPE && !already_pending) {
    // The SIGPIPE this write raised is pending on this thread: take it before unblocking.
    const timespec no_wait{};
    while (::sigtimedwait(&sigpipe, nullptr, &no_wait) < 0 && errno == EINTR) {
    }
  }
  ::pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
  errno = error;
  return written;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  // Neither (a stopped child, which a wait without WUNTRACED never reports): 255, ssh's code
  // for "no exit status", which the emulator used; LocalBackend's 128 named no signal either.
  return 255;
}

}  // namespace exedev::detail
