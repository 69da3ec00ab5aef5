// Real children of this process: /bin/sh started through spawn_process and reaped on a pidfd.
#include "common/subprocess.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>

#include <csignal>
#include <fcntl.h>
#include <sstream>
#include <unistd.h>

namespace asio = boost::asio;
using namespace exedev::detail;

namespace {

struct Finished {
  std::string output;  // stdout and stderr together
  std::optional<int> status;
};

// /bin/sh running `script` in /, with a PATH only; its descriptors are left to the caller.
SpawnRequest sh_request(const std::string& script) {
  SpawnRequest request;
  request.program = "/bin/sh";
  request.argv = {"sh", "-c", script};
  request.environment = {"PATH=/usr/bin:/bin"};
  request.directory = "/";
  return request;
}

// Runs `script` under /bin/sh with stdout and stderr on one pipe, then reaps it.
Finished run_sh(const std::string& script, ProcessGrouping grouping = ProcessGrouping::new_session,
                const std::string& directory = "/") {
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  auto request = sh_request(script);
  request.directory = directory;
  request.grouping = grouping;
  request.stdout_fd = pipe_fds[1];
  request.stderr_fd = pipe_fds[1];
  const auto started = spawn_process(request);
  ::close(pipe_fds[1]);
  REQUIRE(started.error == 0);
  Finished finished;
  char buffer[4096];
  while (true) {
    const auto n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n <= 0) break;
    finished.output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  asio::io_context ioc;
  asio::posix::stream_descriptor pidfd(ioc, open_pidfd(started.pid));
  asio::co_spawn(
      ioc, [&]() -> asio::awaitable<void> { finished.status = co_await reap_when_exited(pidfd, started.pid); },
      asio::detached);
  ioc.run();
  return finished;
}

// Fields 5 and 6 of /proc/<pid>/stat as the child printed them: process group and session.
std::pair<long, long> group_and_session(const std::string& stat) {
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string state;
  long parent = 0, group = 0, session = 0;
  fields >> state >> parent >> group >> session;
  return {group, session};
}

}  // namespace

TEST_CASE("a spawned child writes to the given descriptors, and its exit code is reaped", "[unit][common]") {
  const auto finished = run_sh("echo out; echo err >&2; pwd; read line; echo \"stdin:$line\"; exit 3", {}, "/tmp");
  CHECK(finished.output == "out\nerr\n/tmp\nstdin:\n");  // stdin is /dev/null
  REQUIRE(finished.status);
  CHECK(exit_code_of(*finished.status) == 3);
}

TEST_CASE("a child killed by a signal exits with 128 + the signal", "[unit][common]") {
  const auto finished = run_sh("kill -9 $$");
  REQUIRE(finished.status);
  CHECK(exit_code_of(*finished.status) == 128 + SIGKILL);
}

TEST_CASE("a child leads a session or a process group of its own", "[unit][common]") {
  // `exec cat` keeps the shell's pid, so the stat is the child's own.
  const auto in_session = run_sh("echo $$; exec cat /proc/self/stat");
  const long pid = std::stol(in_session.output);
  const auto [group, session] = group_and_session(in_session.output.substr(in_session.output.find('\n') + 1));
  CHECK(group == pid);
  CHECK(session == pid);

  const auto in_group = run_sh("echo $$; exec cat /proc/self/stat", ProcessGrouping::new_group);
  const long group_pid = std::stol(in_group.output);
  const auto [own_group, same_session] = group_and_session(in_group.output.substr(in_group.output.find('\n') + 1));
  CHECK(own_group == group_pid);
  CHECK(same_session == ::getsid(0));
}

TEST_CASE("a child starts with default signal dispositions and none of our other descriptors", "[unit][common]") {
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  struct sigaction previous{};
  REQUIRE(::sigaction(SIGUSR1, &ignore, &previous) == 0);
  const int leaked = ::open("/dev/null", O_RDONLY);  // deliberately without O_CLOEXEC
  REQUIRE(leaked >= 3);
  const auto finished = run_sh("test -e /dev/fd/" + std::to_string(leaked) + " && echo leaked; kill -USR1 $$; exit 0");
  ::close(leaked);
  ::sigaction(SIGUSR1, &previous, nullptr);
  CHECK(finished.output.empty());
  REQUIRE(finished.status);
  CHECK(exit_code_of(*finished.status) == 128 + SIGUSR1);
}

TEST_CASE("a program or directory that cannot be used is a start error, not a child", "[unit][common]") {
  SpawnRequest request;
  request.program = "/nonexistent/program";
  request.argv = {"program"};
  request.directory = "/";
  request.stdout_fd = 1;
  request.stderr_fd = 2;
  const auto missing_program = spawn_process(request);
  CHECK(missing_program.error == ENOENT);
  CHECK(missing_program.pid == -1);
  request.program = "/bin/sh";
  request.directory = "/nonexistent/directory";
  CHECK(spawn_process(request).error == ENOENT);
}

TEST_CASE("kill_process_group reaches the whole group, grandchildren included", "[unit][common]") {
  int pipe_fds[2];
  REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
  // A background grandchild holds the pipe open; the group kill must end it too, or the read
  // below would never see EOF.
  auto request = sh_request("sleep 600 & echo started; wait");
  request.stdout_fd = pipe_fds[1];
  request.stderr_fd = pipe_fds[1];
  const auto started = spawn_process(request);
  ::close(pipe_fds[1]);
  REQUIRE(started.error == 0);
  char buffer[64];
  REQUIRE(::read(pipe_fds[0], buffer, sizeof buffer) > 0);  // the grandchild runs
  CHECK(kill_process_group(started.pid));
  while (::read(pipe_fds[0], buffer, sizeof buffer) > 0) {
  }
  ::close(pipe_fds[0]);
  asio::io_context ioc;
  asio::posix::stream_descriptor pidfd(ioc, open_pidfd(started.pid));
  std::optional<int> status;
  asio::co_spawn(
      ioc, [&]() -> asio::awaitable<void> { status = co_await reap_when_exited(pidfd, started.pid); }, asio::detached);
  ioc.run();
  REQUIRE(status);
  CHECK(exit_code_of(*status) == 128 + SIGKILL);
}

TEST_CASE("a child reads the given stdin, and a stream left at -1 is /dev/null", "[unit][common]") {
  int to_child[2];
  int from_child[2];
  REQUIRE(::pipe2(to_child, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(from_child, O_CLOEXEC) == 0);
  auto request = sh_request("read line; echo \"stdin:$line\"; echo err >&2");
  request.stdin_fd = to_child[0];
  request.stdout_fd = from_child[1];
  const auto started = spawn_process(request);
  ::close(to_child[0]);
  ::close(from_child[1]);
  REQUIRE(started.error == 0);
  REQUIRE(::write(to_child[1], "hello\n", 6) == 6);
  ::close(to_child[1]);
  std::string output;
  char buffer[64];
  for (ssize_t n; (n = ::read(from_child[0], buffer, sizeof buffer)) > 0;) output.append(buffer, static_cast<std::size_t>(n));
  ::close(from_child[0]);
  CHECK(output == "stdin:hello\n");  // stderr went to /dev/null
  kill_and_reap_now(started.pid);
}

TEST_CASE("write_without_sigpipe: a pipe without reader is EPIPE, and no SIGPIPE is left", "[unit][common]") {
  // SIGPIPE's default disposition ends the process: the write must not raise it.
  struct sigaction default_action{};
  default_action.sa_handler = SIG_DFL;
  struct sigaction previous{};
  REQUIRE(::sigaction(SIGPIPE, &default_action, &previous) == 0);
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  CHECK(write_without_sigpipe(fds[1], "ab", 2) == 2);
  ::close(fds[0]);
  errno = 0;
  CHECK(write_without_sigpipe(fds[1], "ab", 2) == -1);
  CHECK(errno == EPIPE);
  sigset_t pending;
  ::sigpending(&pending);
  CHECK(sigismember(&pending, SIGPIPE) == 0);
  ::close(fds[1]);
  ::sigaction(SIGPIPE, &previous, nullptr);
}
