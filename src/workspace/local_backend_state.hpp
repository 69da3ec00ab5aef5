#pragma once
// LocalBackend's state and what its commands (local_backend_commands.cpp), command streams
// (local_command_stream.cpp) and files (local_backend_files.cpp) share. Internal.

#include <exedev/workspace/local_backend.hpp>

#include <boost/asio/posix/stream_descriptor.hpp>

#include <sys/types.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <exedev/workspace/errors.hpp>

namespace exedev::workspace {
namespace local {

/// Throws the path error for errno value `error`.
[[noreturn]] inline void throw_errno(int error, const std::string& path, const std::string& what = "cannot access") {
  throw path_error(static_cast<std::errc>(error), path, what);
}

[[nodiscard]] bool is_directory(const std::string& path);

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

/// Which of a command's standard streams are pipes to this process; the others are /dev/null.
struct ChildPipes {
  bool in = false;
  bool out = true;
  bool err = true;
};

/// A started command: its pid (also its session's and process group's id) and this process's
/// ends of the pipes ChildPipes asked for.
struct Child {
  pid_t pid = -1;
  Fd in;  // the write end of its stdin
  Fd out;
  Fd err;
};

/// Kills and reaps (blocking) a child abandoned on an unexpected path, such as a coroutine frame
/// destroyed with its io_context. The normal paths reap asynchronously.
class ChildGuard {
 public:
  explicit ChildGuard(pid_t pid) : pid_(pid) {}
  ~ChildGuard();
  ChildGuard(const ChildGuard&) = delete;
  ChildGuard& operator=(const ChildGuard&) = delete;
  void release() { pid_ = -1; }

 private:
  pid_t pid_;
};

/// Reaps a SIGKILLed child without blocking the executor, within a grace of 2 s; past it,
/// reap_in_background takes `pidfd` over. Never throws for a cancellation.
Task<void> reap_killed(boost::asio::posix::stream_descriptor& pidfd, pid_t pid);

/// A detached coroutine owns `pidfd` and reaps the child whenever it exits, so that no zombie is
/// left.
void reap_in_background(boost::asio::posix::stream_descriptor pidfd, pid_t pid);

}  // namespace local

struct LocalBackend::State {
  WorkspaceRef ref;
  Env env;
  std::mutex mutex;
  std::string resolved;  // the working directory once resolved (guarded by mutex)
  std::map<std::string, std::pair<std::unique_ptr<std::mutex>, int>> file_locks;  // guarded by mutex

  // Throws WorkspaceUnavailableError unless the directory exists; returns it resolved.
  std::string ensure_alive();

  // Starts `argv` as this backend's commands start: the leader of a session of its own, in `root`
  // (ensure_alive()'s answer), with the inherited variables, then `env`, then `own_env`, and the
  // pipes `pipes` asks for. Returns 0, or the exit code of a program that cannot run (126 or
  // 127; no child then). Throws for the rest: the directory missing or closed, a system error.
  int start_command(const std::vector<std::string>& argv, const Env& own_env, const std::string& root,
                    local::ChildPipes pipes, local::Child& child);

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

}  // namespace exedev::workspace
