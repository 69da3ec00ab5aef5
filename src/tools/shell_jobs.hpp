#pragma once
// Background jobs (internal): commands started inside a workspace that outlive the call, and
// the run, that started them. Every command, file and signal goes through the workspace, so
// a job started through one backend can be checked and stopped through another attached to
// the same environment, and by the reference harness (see shell_scripts.hpp for the files).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <exedev/workspace/workspace.hpp>

#include "tools/shell_scripts.hpp"

namespace exedev::tools::detail {

using workspace::Task;

/// Runs `op` to its end even when the caller was cancelled (on a coroutine the cancellation
/// does not reach), bounded by `limit` when given (WorkspaceTimeoutError past it); the caller's
/// cancellation state is left as it was. For stopping a job, which must not stop halfway.
Task<void> finish_despite_cancellation(Task<void> op, std::optional<std::chrono::steady_clock::duration> limit);

/// Job::launch's request.prelude ended with a non-zero status: the job was not launched.
struct PreludeFailed {
  int exit_code = 0;
  std::string stdout_text;
};

/// One detached command and the files that describe it. Cheap to copy.
class Job {
 public:
  /// Starts `request.command` detached (one workspace command, bounded by kControlTimeout).
  /// An exclusive request whose directory exists attaches to that job (ModelRetry when it has
  /// no handle yet: its launch is still in flight). A `request.prelude` that ends with one of its exit
  /// codes is PreludeFailed (nothing launched). A launcher failure is ModelRetry; missing
  /// `mv`/`base64` is WorkspaceError. Cancellation: as Workspace::run; a launch cancelled
  /// after the supervisor started leaves it waiting until it sees the launcher gone, and it
  /// then publishes exit code 143 without running the command.
  static Task<Job> launch(std::shared_ptr<workspace::Workspace> workspace, LaunchRequest request,
                          workspace::Env env);
  /// The job in `directory`, from its `handle` file; nullopt when there is none (missing,
  /// unreadable or malformed). A WorkspaceError propagates.
  static Task<std::optional<Job>> attach(std::shared_ptr<workspace::Workspace> workspace, std::string directory,
                                         bool combined);

  [[nodiscard]] const std::string& directory() const { return directory_; }
  [[nodiscard]] long long pid() const { return handle_.pid; }
  [[nodiscard]] const std::optional<long long>& pgid() const { return handle_.pgid; }
  [[nodiscard]] std::string output_path() const;  ///< output.log, or stdout.log when separate
  [[nodiscard]] std::string stderr_path() const;  ///< output.log, or stderr.log when separate
  [[nodiscard]] std::string status_path() const;
  /// What a model runs to stop the whole job: `kill -- -<pgid>` or `kill <pid>`.
  [[nodiscard]] std::string stop_command() const;

  /// status.json as published (UTF-8, invalid bytes replaced), nullopt before the first
  /// publication. A final status (an integer exit code) is cached: it never changes.
  Task<std::optional<std::string>> status_text();
  /// The exit code once published; nullopt while running (also while unpublished).
  Task<std::optional<long long>> exit_code();
  /// Bytes in `path` (0 when missing).
  Task<std::uint64_t> size(std::string path);
  /// Up to `length` bytes of `path` from `offset`, read inside the workspace.
  Task<std::string> read(std::string path, std::uint64_t offset, std::uint64_t length);
  /// SIGTERM to the job's process group (or pid), then SIGKILL when it is still there after
  /// kKillGrace (at once when the supervisor already finished but members remain).
  /// Cancellation: stops between commands; callers that must finish it shield it.
  Task<void> kill();
  /// Removes the job directory (a missing one is fine).
  Task<void> cleanup();

 private:
  Job(std::shared_ptr<workspace::Workspace> workspace, std::string directory, JobHandle handle, bool combined)
      : workspace_(std::move(workspace)), directory_(std::move(directory)), handle_(handle), combined_(combined) {}
  /// Whether `signal` reached a process ("no such process" is false, other failures throw).
  Task<bool> send(std::string signal);

  std::shared_ptr<workspace::Workspace> workspace_;
  std::string directory_;
  JobHandle handle_;
  bool combined_ = false;
  std::shared_ptr<std::optional<std::string>> final_status_ = std::make_shared<std::optional<std::string>>();
};

}  // namespace exedev::tools::detail
