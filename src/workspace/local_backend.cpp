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

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/workspace.hpp>

#include "common/coroutines.hpp"
#include "common/event.hpp"
#include "common/subprocess.hpp"
#include "common/time_limits.hpp"
#include "workspace/shell_filesystem.hpp"
#include "workspace/shield.hpp"

namespace exedev::workspace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto kOutputDrainGrace = 2s;
constexpr auto kReapGrace = 2s;
constexpr const char* kInheritedEnv[] = {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE"};

[[noreturn]] void throw_errno(int error, const std::string& path, const std::string& what = "cannot access") {
  throw path_error(static_cast<std::errc>(error), path, what);
}

void require_absolute(const std::string& path) {
  if (path.empty() || path.front() != '/') throw std::invalid_argument("path must be absolute, got '" + path + "'");
}

bool is_directory(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Closes a file descriptor on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  void adopt(int fd) {
    reset();
    fd_ = fd;
  }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// posixpath.split
std::pair<std::string, std::string> posix_split(const std::string& p) {
  const auto i = p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1;
  std::string head = p.substr(0, i);
  std::string tail = p.substr(i);
  if (!head.empty() && head.find_first_not_of('/') != std::string::npos) {
    while (!head.empty() && head.back() == '/') head.pop_back();
  }
  return {head, tail};
}

std::string read_link(const std::string& path) {
  std::string buffer(256, '\0');
  while (true) {
    const auto n = ::readlink(path.c_str(), buffer.data(), buffer.size());
    if (n < 0) throw_errno(errno, path, "cannot read symlink");
    if (static_cast<std::size_t>(n) < buffer.size()) return buffer.substr(0, static_cast<std::size_t>(n));
    buffer.resize(buffer.size() * 2);
  }
}

// Python's posixpath._joinrealpath(strict=False): a loop returns the unresolved rest joined on.
std::pair<std::string, bool> join_realpath(std::string path, std::string rest,
                                           std::map<std::string, std::optional<std::string>>& seen) {
  if (!rest.empty() && rest.front() == '/') {
    rest = rest.substr(1);
    path = "/";
  }
  while (!rest.empty()) {
    const auto slash = rest.find('/');
    const std::string name = rest.substr(0, slash);
    rest = slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (name.empty() || name == ".") continue;
    if (name == "..") {
      if (!path.empty()) {
        auto [head, tail] = posix_split(path);
        path = head;
        if (tail == "..") path = detail::posix_join(detail::posix_join(path, ".."), "..");
      } else {
        path = "..";
      }
      continue;
    }
    const auto newpath = detail::posix_join(path, name);
    struct stat st{};
    const bool is_link = ::lstat(newpath.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
    if (!is_link) {
      path = newpath;
      continue;
    }
    if (const auto it = seen.find(newpath); it != seen.end()) {
      if (it->second) {
        path = *it->second;
        continue;
      }
      return {detail::posix_join(newpath, rest), false};  // a loop
    }
    seen[newpath] = std::nullopt;
    auto [resolved, ok] = join_realpath(path, read_link(newpath), seen);
    if (!ok) return {detail::posix_join(resolved, rest), false};
    path = resolved;
    seen[newpath] = path;
  }
  return {path, true};
}

std::string native_realpath(const std::string& path) {
  std::map<std::string, std::optional<std::string>> seen;
  return normpath(join_realpath("", path, seen).first);
}

// mkdir -p. An existing non-directory is file_exists at the end of the path (or `last_error`),
// not_a_directory in the middle, as the OS reports them to os.makedirs.
void make_dirs(const std::string& path, std::errc last_error) {
  std::string current;
  std::size_t start = 1;
  while (start <= path.size()) {
    const auto end = std::min(path.find('/', start), path.size());
    const bool last = end >= path.size() || path.find_first_not_of('/', end) == std::string::npos;
    if (end > start) {
      current += "/" + path.substr(start, end - start);
      if (::mkdir(current.c_str(), 0777) != 0) {
        const int error = errno;
        if (error != EEXIST) throw_errno(error, path, "cannot create directory");
        if (!is_directory(current)) throw path_error(last ? last_error : std::errc::not_a_directory, path,
                                                     "cannot create directory");
      }
    }
    if (last) break;
    start = end + 1;
  }
}

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path) == 0 ? 0 : errno;
}

std::string decode(std::string_view bytes) { return utf8_replace_invalid(bytes); }

}  // namespace

// ---- state ----

struct LocalBackend::State {
  WorkspaceRef ref;
  Env env;
  std::mutex mutex;
  std::string resolved;  // the working directory once resolved (guarded by mutex)
  std::map<std::string, std::pair<std::unique_ptr<std::mutex>, int>> file_locks;  // guarded by mutex

  // Throws WorkspaceUnavailableError unless the directory exists; returns it resolved.
  std::string ensure_alive() {
    std::string dir;
    {
      std::lock_guard lock(mutex);
      dir = resolved;
    }
    if (dir.empty()) {
      char* real = ::realpath(ref.id.c_str(), nullptr);
      if (real) {
        dir = real;
        std::free(real);
      }
    }
    if (dir.empty() || !is_directory(dir)) {
      throw WorkspaceUnavailableError(fmt::format("local workspace directory {} does not exist", ref.id));
    }
    std::lock_guard lock(mutex);
    resolved = dir;
    return dir;
  }

  // Serializes this backend's reads and writes of one file (aliases share a key).
  class FileLock {
   public:
    FileLock(State& state, std::string key) : state_(state), key_(std::move(key)) {
      std::mutex* m = nullptr;
      {
        std::lock_guard lock(state_.mutex);
        auto& entry = state_.file_locks[key_];
        if (!entry.first) entry.first = std::make_unique<std::mutex>();
        ++entry.second;
        m = entry.first.get();
      }
      m->lock();
      mutex_ = m;
    }
    ~FileLock() {
      mutex_->unlock();
      std::lock_guard lock(state_.mutex);
      auto it = state_.file_locks.find(key_);
      if (--it->second.second == 0) state_.file_locks.erase(it);
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

   private:
    State& state_;
    std::string key_;
    std::mutex* mutex_ = nullptr;
  };
};

namespace {

// A user's home directory from the password database, or nullopt.
std::optional<std::string> password_home(const std::optional<std::string>& user) {
  std::vector<char> buffer(16384);
  struct passwd entry {};
  struct passwd* found = nullptr;
  const int error = user ? ::getpwnam_r(user->c_str(), &entry, buffer.data(), buffer.size(), &found)
                         : ::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found);
  if (error != 0 || found == nullptr || found->pw_dir == nullptr) return std::nullopt;
  return std::string(found->pw_dir);
}

// Python's posixpath.expanduser: `~` is HOME (the password database when HOME is unset),
// `~user` that user's home; an unknown user leaves the path as written.
std::string expand_user(std::string path) {
  if (path.empty() || path.front() != '~') return path;
  const auto slash = std::min(path.find('/', 1), path.size());
  std::optional<std::string> home;
  if (slash == 1) {
    const char* env_home = std::getenv("HOME");
    home = env_home ? std::optional<std::string>(env_home) : password_home(std::nullopt);
  } else {
    home = password_home(path.substr(1, slash - 1));
  }
  if (!home) return path;
  while (!home->empty() && home->back() == '/') home->pop_back();
  const std::string expanded = *home + path.substr(slash);
  return expanded.empty() ? "/" : expanded;
}

}  // namespace

LocalBackend::LocalBackend(std::string working_dir, Env env) : state_(std::make_shared<State>()) {
  working_dir = expand_user(std::move(working_dir));
  if (working_dir.empty() || working_dir.front() != '/') {
    std::string cwd(4096, '\0');
    if (!::getcwd(cwd.data(), cwd.size())) throw_errno(errno, ".", "cannot read the current directory");
    working_dir = detail::posix_join(cwd.c_str(), working_dir);
  }
  state_->ref = WorkspaceRef{"local", normpath(working_dir)};
  state_->env = std::move(env);
}

LocalBackend::~LocalBackend() = default;

std::optional<WorkspaceRef> LocalBackend::ref() const { return state_->ref; }

Task<std::string> LocalBackend::working_dir() { co_return state_->ensure_alive(); }

// ---- commands ----

namespace {

struct Spawned {
  pid_t pid = -1;
  Fd out;
  Fd err;
};

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
    if (dir.empty()) dir = ".";
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

// Starts the child in a session of its own, with the pipes' write ends as stdout/stderr.
// Returns errno on failure.
int spawn(const std::string& program, const std::vector<std::string>& argv, const Env& env, const std::string& root,
          Spawned& child) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return errno;
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return errno;
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);
  exedev::detail::SpawnRequest request;
  request.program = program;
  request.argv = argv;
  for (const auto& [key, value] : env) request.environment.push_back(key + "=" + value);
  request.directory = root;
  request.grouping = exedev::detail::ProcessGrouping::new_session;
  request.stdout_fd = out_w.get();
  request.stderr_fd = err_w.get();
  const auto started = exedev::detail::spawn_process(request);
  if (started.error != 0) return started.error;
  child.pid = started.pid;
  child.out.adopt(out_r.release());
  child.err.adopt(err_r.release());
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

// Reaps a killed child without blocking the executor, within the reap grace; past it, a
// detached coroutine keeps waiting so that no zombie is left.
Task<void> reap(asio::posix::stream_descriptor& pidfd, pid_t pid, std::shared_ptr<Capture> capture) {
  if (capture->exited) co_return;
  auto done = std::make_shared<bool>(false);
  auto wait = [](asio::posix::stream_descriptor& fd, pid_t pid, std::shared_ptr<Capture> capture,
                 std::shared_ptr<bool> done) -> Task<void> {
    const auto status = co_await exedev::detail::reap_when_exited(fd, pid);
    if (!status) co_return;
    capture->exited = true;
    capture->status = *status;
    *done = true;
  };
  try {
    co_await detail::run_shielded(wait(pidfd, pid, capture, done), kReapGrace);
  } catch (const WorkspaceTimeoutError&) {
  }
  if (*done) co_return;
  // A SIGKILLed process that has not exited after the grace is stuck in the kernel: let a
  // detached waiter own the pidfd and reap it whenever it exits.
  auto owner = std::make_shared<asio::posix::stream_descriptor>(std::move(pidfd));
  asio::co_spawn(
      owner->get_executor(),
      [](std::shared_ptr<asio::posix::stream_descriptor> fd, pid_t pid) -> Task<void> {
        co_await exedev::detail::reap_when_exited(*fd, pid);
      }(owner, pid),
      asio::detached);
}

std::string timeout_text(double seconds) { return fmt::format("{:g}", seconds); }

// Kills and reaps (blocking) a child that run() abandons on an unexpected path, such as the
// coroutine frame being destroyed with its io_context. The normal paths reap asynchronously.
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard() {
    if (pid_ > 0) exedev::detail::kill_and_reap_now(pid_);
  }
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  void release() { pid_ = -1; }

 private:
  pid_t pid_;
};

}  // namespace

Task<CommandResult> LocalBackend::run(Command command, RunOptions options) {
  // run_command() keeps awaiting (to kill and reap) after a cancellation, so it must not throw
  // at its co_awaits.
  CommandResult result;
  EXEDEV_AWAIT_DESPITE_CANCELLATION(
      error, [](LocalBackend& backend, Command command, RunOptions options, CommandResult& result) -> Task<void> {
        if (co_await detail::cancellation_requested()) {
          throw boost::system::system_error(asio::error::operation_aborted, "command cancelled before it started");
        }
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

  Env env;
  for (const char* key : kInheritedEnv) {
    if (const char* value = std::getenv(key)) env[key] = value;
  }
  for (const auto& [key, value] : state_->env) env[key] = value;
  for (const auto& [key, value] : options.env) env[key] = value;

  const auto lookup = find_program(argv[0], env, root);
  if (lookup.missing_code) co_return not_runnable(argv[0], lookup.missing_code);
  Spawned child;
  if (const int error = spawn(lookup.program, argv, env, root, child); error != 0) {
    if (error != ENOENT && error != EACCES) {
      throw std::system_error(error, std::generic_category(), "cannot start '" + argv[0] + "'");
    }
    // The working directory, not the program, may be what is missing or closed.
    state_->ensure_alive();
    if (::access(root.c_str(), X_OK) != 0) throw_errno(errno, root, "cannot enter the working directory");
    co_return not_runnable(argv[0], error == EACCES ? 126 : 127);
  }
  ChildGuard guard(child.pid);

  const auto executor = co_await asio::this_coro::executor;
  asio::posix::stream_descriptor exit_fd(executor, exedev::detail::open_pidfd(child.pid));
  asio::posix::stream_descriptor out(executor, child.out.release());
  asio::posix::stream_descriptor err(executor, child.err.release());
  auto capture = std::make_shared<Capture>();

  if (deadline && Clock::now() >= *deadline) {
    exedev::detail::kill_process_group(child.pid);
    co_await reap(exit_fd, child.pid, capture);
    guard.release();
    throw WorkspaceTimeoutError(
        fmt::format("command timed out after {}s during startup", timeout_text(options.timeout->count())), "", "");
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

  // Wait until the outcome is known: exit with both pipes at EOF, exit plus the drain grace,
  // overflow, a helper failure, the deadline, or the caller's cancellation.
  bool cancelled = false;
  while (!capture->failure && !capture->overflow && !(capture->exited && capture->pipes_done())) {
    if (co_await detail::cancellation_requested()) {  // also a cancellation that came before the wait
      cancelled = true;
      break;
    }
    auto until = deadline.value_or(Clock::time_point::max());
    if (capture->exited) until = std::min(until, capture->exit_time + kOutputDrainGrace);
    if (Clock::now() >= until) break;
    co_await capture->changed.wait_until(until);
    if (co_await detail::cancellation_requested()) {
      cancelled = true;
      break;
    }
  }
  // Stop the helpers and wait for them: they use this frame's descriptors. A further
  // cancellation from the caller only ends one wait early: the loop waits again.
  for (auto& signal : capture->stop) signal.emit(asio::cancellation_type::terminal);
  while (capture->live > 0) co_await capture->changed.wait();
  const std::exception_ptr failure = capture->failure;
  const bool exited = capture->exited;  // before reap() records the exit of a killed child
  const bool completed = exited && !cancelled && !capture->overflow && !failure;
  bool group_killed = true;
  if (!completed) {
    if (!exited) group_killed = exedev::detail::kill_process_group(child.pid);
    else ::killpg(child.pid, SIGKILL);  // background jobs still holding the output
    co_await reap(exit_fd, child.pid, capture);
  }
  guard.release();

  if (failure) std::rethrow_exception(failure);
  if (cancelled) throw boost::system::system_error(asio::error::operation_aborted, "command cancelled");
  if (capture->overflow) {
    throw WorkspaceOutputLimitError(
        "local workspace output exceeded 10 MiB safety limit; redirect the command's output to a file and read "
        "part of it instead",
        max_capture_bytes, decode(std::string_view(capture->streams[Capture::kOut]).substr(0, kept_capture_bytes)),
        decode(std::string_view(capture->streams[Capture::kErr]).substr(0, kept_capture_bytes)));
  }
  if (!exited) {
    const auto seconds = timeout_text(options.timeout ? options.timeout->count() : 0.0);
    throw WorkspaceTimeoutError(
        group_killed ? fmt::format("command timed out after {}s and was killed", seconds)
                     : fmt::format("command timed out after {}s; killing its process group was denied, so only "
                                   "the command itself was killed",
                                   seconds),
        decode(capture->streams[Capture::kOut]), decode(capture->streams[Capture::kErr]));
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

// ---- files ----

Task<Bytes> LocalBackend::read_bytes(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  State::FileLock lock(*state_, native_realpath(path));
  Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) throw_errno(errno, path, "cannot read");
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) throw_errno(errno, path, "cannot read");
  if (S_ISDIR(st.st_mode)) throw path_error(std::errc::is_a_directory, path, "cannot read");
  if (!S_ISREG(st.st_mode)) throw path_error(not_a_regular_file, path, "not a regular file");
  Bytes data;
  data.reserve(static_cast<std::size_t>(st.st_size));
  std::array<char, 64 * 1024> chunk;
  while (true) {
    const auto n = ::read(fd.get(), chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(errno, path, "cannot read");
    if (n == 0) break;
    data.append(chunk.data(), static_cast<std::size_t>(n));
  }
  co_return data;
}

Task<void> LocalBackend::write_bytes(std::string path, Bytes data) {
  require_absolute(path);
  state_->ensure_alive();
  make_dirs(detail::posix_dirname(path), std::errc::not_a_directory);
  State::FileLock lock(*state_, native_realpath(path));
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    throw path_error(not_a_regular_file, path, "not a regular file");
  }
  Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666));
  if (fd.get() < 0) throw_errno(errno, path, "cannot write");
  std::size_t written = 0;
  while (written < data.size()) {
    const auto n = ::write(fd.get(), data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(errno, path, "cannot write");
    written += static_cast<std::size_t>(n);
  }
  if (::close(fd.release()) != 0) throw_errno(errno, path, "cannot write");
  co_return;
}

Task<FileEntry> LocalBackend::stat(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) throw_errno(errno, path, "cannot stat");
  const bool dir = S_ISDIR(st.st_mode);
  FileEntry entry;
  entry.name = detail::posix_basename(normpath(path));
  entry.path = path;
  entry.is_dir = dir;
  if (!dir) entry.size = static_cast<std::uint64_t>(st.st_size);
  co_return entry;
}

Task<std::vector<FileEntry>> LocalBackend::list_dir(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  DIR* dir = ::opendir(path.c_str());
  if (!dir) throw_errno(errno, path, "cannot list");
  std::vector<FileEntry> entries;
  while (true) {
    errno = 0;  // readdir reports its errors only through errno; stat below may set it
    const dirent* item = ::readdir(dir);
    if (!item) break;
    const std::string name = item->d_name;
    if (name == "." || name == "..") continue;
    FileEntry entry{name, detail::posix_join(path, name), false, std::nullopt};
    struct stat st{};
    if (::stat(entry.path.c_str(), &st) == 0) {  // follows links; a loop or dangling link is a file
      entry.is_dir = S_ISDIR(st.st_mode);
      if (!entry.is_dir) entry.size = static_cast<std::uint64_t>(st.st_size);
    }
    entries.push_back(std::move(entry));
  }
  const int error = errno;
  ::closedir(dir);
  if (error != 0) throw_errno(error, path, "cannot list");
  std::sort(entries.begin(), entries.end(), [](const FileEntry& a, const FileEntry& b) { return a.path < b.path; });
  co_return entries;
}

Task<void> LocalBackend::make_dir(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  make_dirs(path, std::errc::file_exists);
  co_return;
}

Task<void> LocalBackend::remove(std::string path) {
  require_absolute(path);
  const auto root = state_->ensure_alive();
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) throw_errno(errno, path, "cannot remove");
  if (!S_ISLNK(st.st_mode)) {
    const auto target = native_realpath(path);
    if (target == "/" || target == root || root.rfind(target + "/", 0) == 0) {
      throw std::invalid_argument("cannot remove the workspace root or its ancestor");
    }
  }
  if (S_ISDIR(st.st_mode)) {
    const int error = ::nftw(path.c_str(), remove_entry, 64, FTW_DEPTH | FTW_PHYS);
    if (error != 0) throw_errno(error > 0 ? error : errno, path, "cannot remove");
  } else if (::unlink(path.c_str()) != 0) {
    throw_errno(errno, path, "cannot remove");
  }
  co_return;
}

Task<bool> LocalBackend::exists(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) co_return true;
  const int error = errno;
  // As pathlib's exists(): these mean "no such path"; anything else (EACCES) is an error.
  if (error == ENOENT || error == ENOTDIR || error == EBADF || error == ELOOP) co_return false;
  throw_errno(error, path, "cannot check");
}

Task<std::string> LocalBackend::realpath(std::string path) {
  require_absolute(path);
  state_->ensure_alive();
  co_return native_realpath(path);
}

}  // namespace exedev::workspace
