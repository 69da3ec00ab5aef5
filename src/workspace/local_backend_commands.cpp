// LocalBackend's commands: the child in a session of its own, its output and exit collected
// by coroutines, the timeout and the output limit.
#include <exedev/workspace/local_backend.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <vector>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include "common/coroutines.hpp"
#include "common/event.hpp"
#include "common/subprocess.hpp"
#include "common/time_limits.hpp"
#include "workspace/local_backend_state.hpp"
#include "workspace/shell_filesystem.hpp"
#include "workspace/shield.hpp"

namespace exedev::workspace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using local::Fd;
using local::throw_errno;

namespace {

constexpr auto kOutputDrainGrace = 2s;
constexpr auto kReapGrace = 2s;
constexpr const char* kInheritedEnv[] = {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE"};

std::string decode(std::string_view bytes) { return utf8_replace_invalid(bytes); }

// A command's environment: the few variables it inherits from this process, then the
// backend's, then the command's own (each overriding the one before).
Env command_env(const Env& backend_env, const Env& own_env) {
  Env env;
  for (const char* key : kInheritedEnv) {
    if (const char* value = std::getenv(key)) env[key] = value;
  }
  for (const auto& [key, value] : backend_env) env[key] = value;
  for (const auto& [key, value] : own_env) env[key] = value;
  return env;
}

}  // namespace

namespace {

// What run() shares with the coroutines that collect a child's output and exit.
struct Capture {
  static constexpr int kOut = 0;
  static constexpr int kErr = 1;
  std::array<std::string, 2> streams;  // stdout, stderr
  std::array<bool, 2> done{};          // EOF seen
  [[nodiscard]] bool pipes_done() const { return done[kOut] && done[kErr]; }
  [[nodiscard]] std::size_t captured() const { return streams[kOut].size() + streams[kErr].size(); }
  bool exited = false;
  Clock::time_point exit_time;
  int status = 0;
  bool overflow = false;
  // Helpers (the two readers and the exit waiter) still running, the first exception one of
  // them threw, and how run() stops them.
  int live = 0;
  std::exception_ptr failure;
  std::array<asio::cancellation_signal, 3> stop;
  // run() waits on this; a helper that changed something wakes run().
  exedev::detail::Event changed;
};

// The PATH lookup of execvp, done with the child's PATH: the first executable regular file
// wins; a match that is not executable makes the result "Permission denied" (126).
struct Lookup {
  std::string program;
  int missing_code = 0;  // 127 or 126 when nothing runnable was found
};

Lookup find_program(const std::string& name, const Env& env, const std::string& root) {
  if (name.find('/') != std::string::npos) return {name, 0};
  const auto it = env.find("PATH");
  const std::string search = it != env.end() ? it->second : "/bin:/usr/bin";
  bool denied = false;
  std::size_t start = 0;
  while (start <= search.size()) {
    const auto end = std::min(search.find(':', start), search.size());
    std::string dir = search.substr(start, end - start);
    start = end + 1;
    // A char, not ".": GCC 12 at -O3 warns falsely about assigning a 1-char literal to a string
    // (-Wrestrict, https://gcc.gnu.org/bugzilla/show_bug.cgi?id=105329).
    if (dir.empty()) dir = '.';
    const auto candidate = detail::posix_join(detail::posix_join(root, dir), name);
    struct stat st{};
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (::access(candidate.c_str(), X_OK) == 0) return {candidate, 0};
    denied = true;
  }
  return {"", denied ? 126 : 127};
}

CommandResult not_runnable(const std::string& argv0, int code) {
  return CommandResult{code, "", argv0 + (code == 126 ? ": Permission denied\n" : ": command not found\n")};
}

// Starts the child in a session of its own, with the pipes `pipes` asks for. Returns errno on
// failure.
int spawn(const std::string& program, const std::vector<std::string>& argv, const Env& env, const std::string& root,
          local::ChildPipes pipes, local::Child& child) {
  // By standard descriptor: this process's end and the child's end of each pipe.
  std::array<Fd, 3> ours;
  std::array<Fd, 3> theirs;
  const std::array<bool, 3> piped{pipes.in, pipes.out, pipes.err};
  for (std::size_t target = 0; target < 3; ++target) {
    if (!piped[target]) continue;
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return errno;
    const bool child_reads = target == 0;
    theirs[target].adopt(ends[child_reads ? 0 : 1]);
    ours[target].adopt(ends[child_reads ? 1 : 0]);
  }
  exedev::detail::SpawnRequest request;
  request.program = program;
  request.argv = argv;
  for (const auto& [key, value] : env) request.environment.push_back(key + "=" + value);
  request.directory = root;
  request.grouping = exedev::detail::ProcessGrouping::new_session;
  request.stdin_fd = theirs[0].get();
  request.stdout_fd = theirs[1].get();
  request.stderr_fd = theirs[2].get();
  const auto started = exedev::detail::spawn_process(request);
  if (started.error != 0) return started.error;
  child.pid = started.pid;
  child.in.adopt(ours[0].release());
  child.out.adopt(ours[1].release());
  child.err.adopt(ours[2].release());
  return 0;
}

// `stream` is Capture::kOut or Capture::kErr. (An index, not a pointer to member: GCC 12 loses
// pointer-to-member parameters of coroutines.)
// `on_output` (may be empty) gets each chunk as it arrives; an exception it throws ends this
// helper and becomes run()'s failure, which stops the command.
Task<void> read_stream(asio::posix::stream_descriptor& pipe, int stream, std::shared_ptr<Capture> capture,
                       OutputCallback on_output) {
  // Cancellation arrives as an error code, never as an exception between operations.
  co_await asio::this_coro::throw_if_cancelled(false);
  std::array<char, 64 * 1024> chunk;
  while (true) {
    boost::system::error_code ec;
    const std::size_t n = co_await pipe.async_read_some(asio::buffer(chunk), asio::redirect_error(asio::use_awaitable, ec));
    capture->streams[static_cast<std::size_t>(stream)].append(chunk.data(), n);
    if (on_output && n > 0) on_output(std::string_view(chunk.data(), n));
    if (capture->captured() > LocalBackend::max_capture_bytes) {
      capture->overflow = true;
      co_return;
    }
    if (ec) {
      // EOF, or the read was cancelled because run() is finishing.
      if (ec != asio::error::operation_aborted) capture->done[static_cast<std::size_t>(stream)] = true;
      co_return;
    }
  }
}

// Waits for the direct child's exit and reaps it.
Task<void> wait_exit(asio::posix::stream_descriptor& pidfd, pid_t pid, std::shared_ptr<Capture> capture) {
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto status = co_await exedev::detail::reap_when_exited(pidfd, pid);
  if (!status) co_return;
  capture->exited = true;
  capture->exit_time = Clock::now();
  capture->status = *status;
}

std::string timeout_text(double seconds) { return fmt::format("{:g}", seconds); }

// Waits until a started command's outcome is known: exit with both pipes at EOF, exit plus the
// drain grace, overflow, a helper failure, the deadline, or the caller's cancellation (true).
// Awaited with throw_if_cancelled off (run()), so that the cancellation is seen here.
Task<bool> wait_for_outcome(std::shared_ptr<Capture> capture, std::optional<Clock::time_point> deadline) {
  while (!capture->failure && !capture->overflow && !(capture->exited && capture->pipes_done())) {
    // Also a cancellation that came before the first wait.
    const auto before_wait = co_await asio::this_coro::cancellation_state;
    if (exedev::detail::was_cancelled(before_wait)) co_return true;
    auto until = deadline.value_or(Clock::time_point::max());
    if (capture->exited) until = std::min(until, capture->exit_time + kOutputDrainGrace);
    if (Clock::now() >= until) break;
    co_await capture->changed.wait_until(until);
    const auto after_wait = co_await asio::this_coro::cancellation_state;
    if (exedev::detail::was_cancelled(after_wait)) co_return true;
  }
  co_return false;
}

}  // namespace

namespace local {

ChildGuard::~ChildGuard() {
  if (pid_ > 0) exedev::detail::kill_and_reap_now(pid_);
}

Task<void> reap_killed(asio::posix::stream_descriptor& pidfd, pid_t pid) {
  auto reaped = std::make_shared<bool>(false);
  auto wait = [](asio::posix::stream_descriptor& fd, pid_t pid, std::shared_ptr<bool> reaped) -> Task<void> {
    const auto status = co_await exedev::detail::reap_when_exited(fd, pid);
    *reaped = status.has_value();
  };
  try {
    co_await detail::run_shielded(wait(pidfd, pid, reaped), kReapGrace);
  } catch (const WorkspaceTimeoutError&) {
  }
  // A SIGKILLed process that has not exited after the grace is stuck in the kernel.
  if (!*reaped) reap_in_background(std::move(pidfd), pid);
}

void reap_in_background(asio::posix::stream_descriptor pidfd, pid_t pid) {
  auto owner = std::make_shared<asio::posix::stream_descriptor>(std::move(pidfd));
  asio::co_spawn(
      owner->get_executor(),
      [](std::shared_ptr<asio::posix::stream_descriptor> fd, pid_t pid) -> Task<void> {
        co_await exedev::detail::reap_when_exited(*fd, pid);
      }(owner, pid),
      asio::detached);
}

}  // namespace local

int LocalBackend::State::start_command(const std::vector<std::string>& argv, const Env& own_env, const std::string& root,
                                       local::ChildPipes pipes, local::Child& child) {
  const Env child_env = command_env(env, own_env);
  const auto lookup = find_program(argv[0], child_env, root);
  if (lookup.missing_code) return lookup.missing_code;
  const int error = spawn(lookup.program, argv, child_env, root, pipes, child);
  if (error == 0) return 0;
  if (error != ENOENT && error != EACCES) {
    throw std::system_error(error, std::generic_category(), "cannot start '" + argv[0] + "'");
  }
  // The working directory, not the program, may be what is missing or closed.
  ensure_alive();
  if (::access(root.c_str(), X_OK) != 0) throw_errno(errno, root, "cannot enter the working directory");
  return error == EACCES ? 126 : 127;
}

Task<CommandResult> LocalBackend::run(Command command, RunOptions options) {
  // run_command() keeps awaiting (to kill and reap) after a cancellation, so it must not throw
  // at its co_awaits.
  CommandResult result;
  EXEDEV_AWAIT_DESPITE_CANCELLATION(
      error, [](LocalBackend& backend, Command command, RunOptions options, CommandResult& result) -> Task<void> {
        co_await exedev::detail::throw_if_cancelled();  // cancelled before the command started
        result = co_await backend.run_command(std::move(command), std::move(options));
      }(*this, std::move(command), std::move(options), result));
  if (error) std::rethrow_exception(error);
  co_return result;
}

Task<CommandResult> LocalBackend::run_command(Command command, RunOptions options) {
  validate_timeout(options.timeout);
  std::vector<std::string> argv = command.is_shell() ? std::vector<std::string>{"/bin/sh", "-c", command.line()}
                                                     : command.args();
  if (argv.empty()) throw std::invalid_argument("command must not be empty");
  const auto root = state_->ensure_alive();
  // The timeout clock starts once the working directory is resolved; startup counts.
  const auto deadline = exedev::detail::deadline_after(options.timeout);

  local::Child child;
  const int missing_code = state_->start_command(argv, options.env, root, local::ChildPipes{}, child);
  if (missing_code != 0) co_return not_runnable(argv[0], missing_code);
  local::ChildGuard guard(child.pid);

  const auto executor = co_await asio::this_coro::executor;
  asio::posix::stream_descriptor exit_fd(executor, exedev::detail::open_pidfd(child.pid));
  asio::posix::stream_descriptor out(executor, child.out.release());
  asio::posix::stream_descriptor err(executor, child.err.release());
  auto capture = std::make_shared<Capture>();

  if (deadline && Clock::now() >= *deadline) {
    exedev::detail::kill_process_group(child.pid);
    co_await local::reap_killed(exit_fd, child.pid);
    guard.release();
    throw WorkspaceTimeoutError(
        fmt::format("command timed out after {}s during startup", timeout_text(options.timeout->count())), PartialOutput{});
  }

  auto start_helper = [&capture, &executor](std::size_t index, Task<void> task) {
    ++capture->live;
    asio::co_spawn(executor, std::move(task),
                   asio::bind_cancellation_slot(capture->stop[index].slot(), [capture](std::exception_ptr e) {
                     if (e && !capture->failure) capture->failure = e;
                     --capture->live;
                     capture->changed.notify();
                   }));
  };
  start_helper(0, read_stream(out, Capture::kOut, capture, options.on_stdout));
  start_helper(1, read_stream(err, Capture::kErr, capture, options.on_stderr));
  start_helper(2, wait_exit(exit_fd, child.pid, capture));

  auto waiting = wait_for_outcome(capture, deadline);
  const bool cancelled = co_await std::move(waiting);
  // Stop the helpers and wait for them: they use this frame's descriptors. A further
  // cancellation from the caller only ends one wait early: the loop waits again.
  for (auto& signal : capture->stop) signal.emit(asio::cancellation_type::terminal);
  while (capture->live > 0) co_await capture->changed.wait();
  const std::exception_ptr failure = capture->failure;
  const bool exited = capture->exited;
  const bool completed = exited && !cancelled && !capture->overflow && !failure;
  bool group_killed = true;
  if (!completed) {
    if (!exited) group_killed = exedev::detail::kill_process_group(child.pid);
    else ::killpg(child.pid, SIGKILL);  // background jobs still holding the output
    if (!exited) co_await local::reap_killed(exit_fd, child.pid);
  }
  guard.release();

  if (failure) std::rethrow_exception(failure);
  if (cancelled) throw boost::system::system_error(asio::error::operation_aborted, "command cancelled");
  if (capture->overflow) {
    throw WorkspaceOutputLimitError(
        "local workspace output exceeded 10 MiB safety limit; redirect the command's output to a file and read "
        "part of it instead",
        max_capture_bytes,
        PartialOutput{decode(std::string_view(capture->streams[Capture::kOut]).substr(0, kept_capture_bytes)),
                      decode(std::string_view(capture->streams[Capture::kErr]).substr(0, kept_capture_bytes))});
  }
  if (!exited) {
    const auto seconds = timeout_text(options.timeout ? options.timeout->count() : 0.0);
    throw WorkspaceTimeoutError(
        group_killed ? fmt::format("command timed out after {}s and was killed", seconds)
                     : fmt::format("command timed out after {}s; killing its process group was denied, so only "
                                   "the command itself was killed",
                                   seconds),
        PartialOutput{decode(capture->streams[Capture::kOut]), decode(capture->streams[Capture::kErr])});
  }
  // A command that ended because its directory was deleted did not run in a live workspace.
  state_->ensure_alive();
  // A named result, not `co_return T{...}`: GCC 12 can lose an aggregate built in co_return.
  CommandResult result;
  result.exit_code = exedev::detail::exit_code_of(capture->status);
  result.stdout_text = decode(capture->streams[Capture::kOut]);
  result.stderr_text = decode(capture->streams[Capture::kErr]);
  co_return result;
}

}  // namespace exedev::workspace
