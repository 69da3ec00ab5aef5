#pragma once
// LocalBackend: commands as subprocesses on this machine and its filesystem (POSIX only).

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/command_stream.hpp>
#include <exedev/workspace/sessions.hpp>

namespace exedev::workspace {

/// Runs commands as subprocesses on this machine and uses its filesystem.
///
/// This isolates nothing: commands and absolute paths reach anywhere this process can. Commands
/// inherit only PATH, HOME, LANG, LC_ALL and LC_CTYPE from this process, then the constructor's
/// env, then the per-call env, so they find the host's tools without inheriting its secrets.
///
/// The directory is the environment: ref() exists from construction ({"local", <absolute
/// normalized path>}, symlinks not resolved), and every operation throws
/// WorkspaceUnavailableError while the directory is missing. Nothing ever recreates it.
///
/// Commands: stdin is /dev/null; each command is the leader of its own session (setsid), so a
/// timeout, a cancellation or an output overflow SIGKILLs its whole process group. Output is
/// read asynchronously on the caller's executor; the child's exit is awaited through a pidfd.
/// run() returns when the direct child has exited and its pipes reached EOF, or at most 2 s
/// after the exit (a background job that keeps stdout open does not hold run()). Output above
/// 10 MiB (stdout and stderr combined) throws WorkspaceOutputLimitError with the first 64 KiB of
/// each stream. A command killed by signal N exits 128 + N.
///
/// Cancellation (terminal, partial or total) of run(): the process group is SIGKILLed and the
/// child reaped (bounded by 2 s, never blocking the executor) before the operation completes
/// with boost::asio::error::operation_aborted. Background jobs that left the process group
/// survive, as they would a timeout.
///
/// Command streams: open_command_stream() starts `/bin/sh -c <script> sh <args...>` as run()
/// starts a command (own session, working directory, environment), with stdin and stdout as pipes
/// read and written on the caller's executor and stderr at /dev/null. A write to a command that
/// closed its stdin is WorkspaceError, never a SIGPIPE. close() and the destructor close both
/// pipes and SIGKILL the command's process group; close() reaps the command (bounded by 2 s,
/// then a detached waiter), the destructor reaps it at once (SIGKILL makes that prompt). Between
/// operations a stream holds no I/O object, so it may be destroyed after its executor.
///
/// Process sessions (ShellProcessSessions): each operation is one `sh -c` command; the holders
/// run on this machine under /tmp/exedev-sessions-<uid> and outlive this process.
///
/// File operations are native, synchronous system calls made inline on the calling thread
/// (they are fast local calls); they complete before returning control, so cancellation has no
/// effect on them. Reads and writes of one file through this backend (keyed by its real path)
/// are serialized; other processes can still interleave with them. Writes are in place
/// (truncate and write), through symlinks.
class LocalBackend final : public WorkspaceBackend,
                           public SupportsCommands,
                           public SupportsFilesystem,
                           public SupportsRealpath,
                           public SupportsTreeTransfer,
                           public SupportsCommandStreams,
                           public ShellProcessSessions {
 public:
  /// Combined stdout+stderr bytes a command may produce.
  static constexpr std::size_t max_capture_bytes = 10 * 1024 * 1024;
  /// Bytes of each stream a WorkspaceOutputLimitError keeps.
  static constexpr std::size_t kept_capture_bytes = 64 * 1024;

  /// `working_dir`: `~` and `~user` are expanded as Python's expanduser does (HOME, else the
  /// password database; an unknown user is left as written) and a relative path is taken from
  /// the current directory, at construction. Apart from that lookup no I/O happens here; the
  /// caller creates and removes the directory.
  explicit LocalBackend(std::string working_dir, Env env = {});
  ~LocalBackend() override;
  LocalBackend(const LocalBackend&) = delete;
  LocalBackend& operator=(const LocalBackend&) = delete;

  [[nodiscard]] std::optional<WorkspaceRef> ref() const override;
  /// The directory with symlinks resolved.
  Task<std::string> working_dir() override;

  Task<CommandResult> run(Command command, RunOptions options) override;
  Task<std::unique_ptr<CommandStream>> open_command_stream(std::string script, std::vector<std::string> args) override;

  /// Paths must be absolute (std::invalid_argument otherwise).
  Task<Bytes> read_bytes(std::string path) override;
  Task<void> write_bytes(std::string path, Bytes data) override;
  Task<FileEntry> stat(std::string path) override;
  Task<std::vector<FileEntry>> list_dir(std::string path) override;
  Task<void> make_dir(std::string path) override;
  Task<void> remove(std::string path) override;
  Task<bool> exists(std::string path) override;
  /// os.path.realpath(path, strict=False): loops do not raise, missing names are kept.
  Task<std::string> realpath(std::string path) override;

  /// Both ends on this machine: `remote_dir` must be absolute, `local_dir` relative paths start
  /// in the current directory. Synchronous, like the file operations (cancellation has no
  /// effect); the destination is replaced by renames, as SupportsTreeTransfer says.
  Task<TreeTransferResult> upload_tree(std::string local_dir, std::string remote_dir, TreeTransferOptions options) override;
  Task<TreeTransferResult> download_tree(std::string remote_dir, std::string local_dir, TreeTransferOptions options) override;

 private:
  Task<CommandResult> run_command(Command command, RunOptions options);
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace exedev::workspace
