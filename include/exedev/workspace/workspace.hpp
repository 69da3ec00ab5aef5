#pragma once
// The Workspace facade: what tools see. Relative paths resolve against the working directory,
// file operations use the backend's native filesystem or fall back to its shell, text is UTF-8.

#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/sessions.hpp>

namespace exedev::workspace {

/// Python's posixpath.normpath, exactly: "" -> ".", two leading slashes kept, three or more
/// collapse to one, ".." above "/" dropped.
[[nodiscard]] std::string normpath(const std::string& path);

/// A facade over a backend. It is itself a backend with every capability, so a Workspace can
/// wrap another Workspace (see WrapperWorkspace). Cheap to construct; holds no lock.
///
/// Cancellation: every operation forwards the caller's cancellation to the backend operation it
/// is awaiting (terminal by default) and completes with boost::asio::error::operation_aborted
/// or the backend's own error; what is left is the backend's documented state. Through the
/// shell-derived filesystem (a backend with commands but no SupportsFilesystem):
/// - read_bytes, stat, list_dir, exists, realpath change nothing; a paged listing's temp file
///   in $TMPDIR is removed even after cancellation (bounded by 10 s);
/// - a cancelled write_bytes leaves the target untouched or fully replaced (the commit is a
///   rename) and removes its temp files even after cancellation (bounded by 10 s);
/// - make_dir and remove are single commands: cancelled, they may or may not have happened
///   (mkdir -p and rm -rf semantics, so retrying is safe).
class Workspace : public WorkspaceBackend,
                  public SupportsCommands,
                  public SupportsFilesystem,
                  public SupportsRealpath,
                  public SupportsConfinedFiles,
                  public SupportsTreeTransfer,
                  public SupportsProcessSessions {
 public:
  /// Precondition: backend is not null (std::invalid_argument otherwise).
  explicit Workspace(std::shared_ptr<WorkspaceBackend> backend);

  /// The provider backend underneath every wrapper.
  [[nodiscard]] const std::shared_ptr<WorkspaceBackend>& backend() const;
  /// Whether this workspace refuses commands and file changes.
  [[nodiscard]] virtual bool read_only() const;
  /// Whether this workspace reaches an environment (false for an UnavailableBackend).
  [[nodiscard]] bool attached() const;

  [[nodiscard]] std::optional<WorkspaceRef> ref() const override;
  Task<std::string> working_dir() override;

  /// Checks the timeout, rejects an empty argv (std::invalid_argument), then delegates;
  /// throws WorkspaceUsageError when the backend cannot run commands.
  Task<CommandResult> run(Command command, RunOptions options) override;
  Task<CommandResult> run(Command command) { return run(std::move(command), RunOptions{}); }
  [[nodiscard]] ShellFilesystemLimits shell_filesystem_limits() const override;

  /// Joins path onto base (default: the working directory) and normalizes it as text.
  /// A relative base throws std::invalid_argument. Confines nothing.
  Task<std::string> resolve(std::string path, std::optional<std::string> base = std::nullopt);

  Task<Bytes> read_bytes(std::string path) override;
  Task<void> write_bytes(std::string path, Bytes data) override;
  Task<FileEntry> stat(std::string path) override;
  Task<std::vector<FileEntry>> list_dir(std::string path) override;
  Task<void> make_dir(std::string path) override;
  Task<void> remove(std::string path) override;
  Task<bool> exists(std::string path) override;
  /// Follows every symlink in the environment (native, else the shell, else text only).
  Task<std::string> realpath(std::string path) override;

  /// Delegates to the backend's SupportsConfinedFiles, else, for a backend with commands and no
  /// native filesystem, to the shell-derived filesystem's (one script each); anything else
  /// answers ConfinedStatus::declined. A WrapperWorkspace declines, as its own overrides of the
  /// separate operations would be bypassed (ReadOnlyWorkspace still reads).
  Task<ConfinedResult> confined_read(ConfinedTarget target, ConfinedReadOptions what) override;
  Task<ConfinedResult> confined_write(ConfinedTarget target, Bytes data, std::string expected_sha256) override;
  Task<ConfinedResult> confined_make_dir(ConfinedTarget target) override;
  Task<ConfinedResult> confined_splice(ConfinedTarget target, ConfinedSplice splice) override;

  /// Moves a whole tree (SupportsTreeTransfer); `remote_dir` is resolved like any path. Throws
  /// WorkspaceUsageError when the backend has no tree transfer.
  Task<TreeTransferResult> upload_tree(std::string local_dir, std::string remote_dir, TreeTransferOptions options) override;
  Task<TreeTransferResult> download_tree(std::string remote_dir, std::string local_dir, TreeTransferOptions options) override;

  /// Process sessions (docs/workspace.md, "Process sessions"): delegated to the backend as they
  /// are; a backend without them throws WorkspaceUsageError, an unavailable one (UnavailableBackend)
  /// WorkspaceUnavailableError with its reason.
  Task<void> start_session(std::string name, ProcessSessionSpec spec) override;
  Task<void> write_stdin(std::string name, Bytes data) override;
  Task<void> close_stdin(std::string name) override;
  Task<SessionOutput> read_output(std::string name, std::uint64_t from_offset, std::size_t max_bytes,
                                  std::chrono::milliseconds wait) override;
  Task<void> resize_terminal(std::string name, TerminalSize size) override;
  Task<void> signal_session(std::string name, std::string signal) override;
  Task<SessionExit> wait_session(std::string name, std::chrono::milliseconds timeout) override;
  Task<std::vector<SessionInfo>> list_sessions() override;
  Task<void> remove_session(std::string name) override;
  /// Attaching only reads (a read-only workspace attaches too; its writes stay refused).
  Task<bool> attach_session(std::string name, std::uint64_t from_offset) override;
  Task<void> detach_session(std::string name) override;

  /// Strict UTF-8: invalid bytes throw std::range_error naming the path.
  Task<std::string> read_text(std::string path);
  Task<void> write_text(std::string path, std::string content);

 protected:
  /// The backend this facade wraps directly (for wrappers).
  [[nodiscard]] const std::shared_ptr<WorkspaceBackend>& wrapped_backend() const { return backend_; }

 private:
  friend std::vector<std::type_index> workspace_layers(const Workspace& workspace);
  std::shared_ptr<WorkspaceBackend> backend_;
};

/// The layers of `workspace`, outermost first: the dynamic type of every facade that is not a
/// plain Workspace, then the provider backend's type. For example
/// ReadOnlyWorkspace(Workspace(LocalBackend)) gives {ReadOnlyWorkspace, LocalBackend}, and
/// no_workspace() gives {UnattachedBackend}. The walk follows each facade's own backend, so a
/// wrapper over a non-Workspace backend ends the list with that backend.
[[nodiscard]] std::vector<std::type_index> workspace_layers(const Workspace& workspace);

/// A facade that composes another workspace: override what changes, the rest delegates.
class WrapperWorkspace : public Workspace {
 public:
  explicit WrapperWorkspace(std::shared_ptr<Workspace> wrapped);
  [[nodiscard]] const std::shared_ptr<Workspace>& wrapped() const { return wrapped_; }
  /// Declined (ConfinedStatus::declined): a subclass that overrides the separate operations
  /// sees every file operation through them. A subclass may delegate again.
  Task<ConfinedResult> confined_read(ConfinedTarget target, ConfinedReadOptions what) override;
  Task<ConfinedResult> confined_write(ConfinedTarget target, Bytes data, std::string expected_sha256) override;
  Task<ConfinedResult> confined_make_dir(ConfinedTarget target) override;
  Task<ConfinedResult> confined_splice(ConfinedTarget target, ConfinedSplice splice) override;

 private:
  std::shared_ptr<Workspace> wrapped_;
};

/// Allows reads; refuses commands and file changes with WorkspaceReadOnlyError. Process
/// sessions: reading their output, waiting for them and listing them are allowed; starting,
/// writing, closing stdin, resizing, signalling and removing are refused.
/// This restricts the workspace API; it is not isolation.
class ReadOnlyWorkspace : public WrapperWorkspace {
 public:
  using WrapperWorkspace::WrapperWorkspace;
  static constexpr const char* reason =
      "This workspace is read-only: running commands and modifying files are disabled. "
      "Reading files, listing directories, and checking that paths exist are allowed.";
  [[nodiscard]] bool read_only() const override { return true; }
  using Workspace::run;
  Task<CommandResult> run(Command command, RunOptions options) override;
  Task<void> write_bytes(std::string path, Bytes data) override;
  Task<void> make_dir(std::string path) override;
  Task<void> remove(std::string path) override;
  /// Reads delegate to the wrapped workspace, as read_bytes does.
  Task<ConfinedResult> confined_read(ConfinedTarget target, ConfinedReadOptions what) override;

  Task<TreeTransferResult> upload_tree(std::string local_dir, std::string remote_dir, TreeTransferOptions options) override;

  Task<void> start_session(std::string name, ProcessSessionSpec spec) override;
  Task<void> write_stdin(std::string name, Bytes data) override;
  Task<void> close_stdin(std::string name) override;
  Task<void> resize_terminal(std::string name, TerminalSize size) override;
  Task<void> signal_session(std::string name, std::string signal) override;
  Task<void> remove_session(std::string name) override;
};

}  // namespace exedev::workspace
