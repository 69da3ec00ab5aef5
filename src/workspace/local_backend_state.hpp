#pragma once
// LocalBackend's state and what its commands (local_backend_commands.cpp) and files
// (local_backend_files.cpp) share. Internal.

#include <exedev/workspace/local_backend.hpp>

#include <unistd.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

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

}  // namespace local

struct LocalBackend::State {
  WorkspaceRef ref;
  Env env;
  std::mutex mutex;
  std::string resolved;  // the working directory once resolved (guarded by mutex)
  std::map<std::string, std::pair<std::unique_ptr<std::mutex>, int>> file_locks;  // guarded by mutex

  // Throws WorkspaceUnavailableError unless the directory exists; returns it resolved.
  std::string ensure_alive();

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
