#pragma once
// Named process sessions: programs that talk back (a REPL kept between steps, a debugger, a
// prompt, a dev server's console), started in the environment, fed stdin and read from by byte
// offset, which outlive the client that started them. Another client (a restarted agent, a
// second backend on the same environment) lists them and attaches again by name.
//
// The capability is SupportsProcessSessions. ShellProcessSessions implements it once for every
// backend that has SupportsCommands (and uses SupportsShellScripts when present): each program
// runs under a detached holder on the machine (`setsid`, and util-linux `script` for a
// pseudo-terminal) that keeps its state in a directory there (docs/workspace.md, "Process
// sessions").
//
// Every operation is one command in the environment (over exe.dev's /exec one request, over
// SSH one channel while it runs), except on an attached session (attach_session): where the
// backend has command streams (SSH, LocalBackend), writes and sequential reads then travel on one
// stream kept open into the holder, costing no command each. Cancellation (Asio per-operation,
// terminal at least) stops that command; the session itself is never stopped by a cancellation.
// What a cancelled operation leaves behind is documented on each one.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/workspace/command_stream.hpp>
#include <exedev/task.hpp>
#include <exedev/workspace/types.hpp>

namespace exedev::workspace {

using exedev::Task;

namespace detail {
struct SessionAttachment;
}

/// A session name: 1 to 64 of [A-Za-z0-9_.-], not starting with '.' or '-'. Throws
/// std::invalid_argument otherwise.
void validate_session_name(const std::string& name);

/// Signal names signal_session() accepts, without "SIG": INT TERM KILL HUP QUIT USR1 USR2 WINCH CONT
/// STOP TSTP ALRM.
[[nodiscard]] const std::vector<std::string>& session_signal_names();

/// How a program ended. `code` is the status its shell reports: the exit code, or 128 + N when
/// signal N ended it, and then `signal` names N by its Linux name ("INT", "KILL"…; "SIG<N>" past
/// 31, up to 64). A program that itself exits with 128 + N reads the same: the holder
/// sees only the shell's status.
struct SessionExit {
  int code = 0;
  std::optional<std::string> signal{};
  friend bool operator==(const SessionExit&, const SessionExit&) = default;
};

/// The terminal size of a pseudo-terminal session.
struct TerminalSize {
  std::uint16_t rows = 24;
  std::uint16_t cols = 80;
  friend bool operator==(const TerminalSize&, const TerminalSize&) = default;
};

/// What start_session() runs and how.
struct ProcessSessionSpec {
  /// The program: an argv (each item literal) or a line for /bin/sh. Empty is refused.
  Command command = Command::shell(std::string{});
  /// Where it starts; unset: the backend's working_dir().
  std::optional<std::string> cwd{};
  /// Variables layered over the environment the holder sees (the backend's own commands').
  Env env{};
  /// true: a pseudo-terminal (stdin, stdout and stderr are its slave side, with `size` and
  /// `term`; the line discipline echoes and turns "\x03" into SIGINT). false: plain pipes, stdin a
  /// FIFO, stdout and stderr merged into one log.
  bool pty = true;
  TerminalSize size{};        ///< pty only.
  std::string term = "xterm-256color";  ///< pty only: TERM.
  /// Output bytes kept in the environment. Past it, the oldest are released (in 64 KiB steps) when
  /// the session is read; read_output() then reports them in dropped_bytes. Offsets never restart.
  /// At least 64 KiB. Where the environment's filesystem cannot release part of a file (no
  /// hole punching), nothing is dropped and the log keeps growing until remove_session().
  std::uint64_t max_output_bytes = 16 * 1024 * 1024;
  EXEDEV_COAWAIT_GUARD;
};

/// What read_output() returns.
struct SessionOutput {
  Bytes data{};                   ///< Raw output bytes from `offset`, at most max_bytes.
  std::uint64_t offset = 0;       ///< Where `data` starts (from_offset, or later when bytes were dropped).
  std::uint64_t next_offset = 0;  ///< Pass it to the next read.
  /// Bytes between from_offset and `offset` that were released (max_output_bytes) before this read.
  std::uint64_t dropped_bytes = 0;
  /// Set once the program has ended.
  std::optional<SessionExit> exit{};
  /// The program and its holder are gone without the end being recorded (the holder was killed
  /// from outside): `exit` stays unset, and no more output will come.
  bool lost = false;
  /// The program has ended (or is lost) and next_offset is the end of its output: nothing more
  /// will come.
  bool complete = false;
};

/// running: the program, or its holder, is alive. exited: its end is recorded. lost: both are
/// gone and nothing recorded how the program ended (the holder was killed from outside).
enum class SessionState { running, exited, lost };

/// One entry of list_sessions().
struct SessionInfo {
  std::string name{};
  SessionState state = SessionState::running;
  std::optional<SessionExit> exit{};  ///< Set when exited.
  bool pty = false;
  std::chrono::system_clock::time_point started{};  ///< Whole seconds, the environment's clock.
  std::string command{};  ///< The command as recorded at start (a shell line; an argv quoted).
};

/// Optional: named process sessions. Names are unique per user per environment. Errors: a bad
/// argument is std::invalid_argument; an unknown name is WorkspaceUsageError; a session the
/// operation cannot act on (a write to an ended program) is WorkspaceError; a missing holder
/// tool is WorkspaceUsageError naming it; a dead environment WorkspaceUnavailableError.
class SupportsProcessSessions {
 public:
  /// Largest max_bytes of read_output().
  static constexpr std::size_t max_read_bytes = 256 * 1024;
  /// Largest data of one write_stdin() (callers split larger input).
  static constexpr std::size_t max_write_bytes = 32 * 1024;
  /// Longest wait of one read_output(), below exe.dev's 30 s per request.
  static constexpr std::chrono::milliseconds max_read_wait{20'000};

  virtual ~SupportsProcessSessions() = default;

  /// Starts `spec` as session `name` and returns once the program runs (its pid and, for a pty,
  /// its terminal are recorded). A live session of that name is refused (WorkspaceUsageError); an
  /// ended one of that name is replaced. Cancelled: the session may have started;
  /// list_sessions() shows it, remove_session() ends it.
  virtual Task<void> start_session(std::string name, ProcessSessionSpec spec) = 0;

  /// Delivers `data` (at most max_write_bytes) to the program's stdin, all of it or throws: an
  /// ended program is WorkspaceError; stdin not taking the bytes within 10 s (the program does
  /// not read) is WorkspaceTimeoutError, after which part of them may have been delivered, as
  /// after a cancellation. A pty takes "\x03" as Ctrl-C, "\x04" as EOF at the start of a line.
  virtual Task<void> write_stdin(std::string name, Bytes data) = 0;

  /// Pipes: the program's stdin reaches EOF once it has read what was written; later writes are
  /// refused. A pty: sends EOT ("\x04", the terminal's EOF at the start of a line); the terminal
  /// stays usable. Cancelled: stdin may or may not have been closed.
  virtual Task<void> close_stdin(std::string name) = 0;

  /// Output from byte `from_offset` (counted since start), at most `max_bytes` (1 to
  /// max_read_bytes), waiting up to `wait` (0 to max_read_wait) for at least one byte past
  /// from_offset or the program's end. An offset past the end waits likewise and returns
  /// nothing. Cancelled: nothing changed; read again from the same offset.
  virtual Task<SessionOutput> read_output(std::string name, std::uint64_t from_offset, std::size_t max_bytes,
                                   std::chrono::milliseconds wait) = 0;

  /// A pty session's new size: the terminal sends SIGWINCH to its foreground group. A pipes
  /// session is refused (WorkspaceUsageError). Rows and cols 1 to 9999.
  virtual Task<void> resize_terminal(std::string name, TerminalSize size) = 0;

  /// Sends `signal` (one of session_signal_names(), e.g. "INT") to the program's process group; for a pty,
  /// to the terminal's foreground group (the job a shell in it runs). An ended program is
  /// WorkspaceError.
  virtual Task<void> signal_session(std::string name, std::string signal) = 0;

  /// The program's end, waiting up to `timeout` (positive) for it; WorkspaceTimeoutError past it,
  /// WorkspaceError for a lost session.
  /// Waits longer than max_read_wait take one command per max_read_wait. Cancelled: nothing
  /// changed.
  virtual Task<SessionExit> wait_session(std::string name, std::chrono::milliseconds timeout) = 0;

  /// Every session of this user in the environment, sorted by name.
  virtual Task<std::vector<SessionInfo>> list_sessions() = 0;

  /// Attaches session `name` from output offset `from_offset`: a stream kept open into its holder
  /// (SupportsCommandStreams; over SSH one session channel, which holds one of the connection's
  /// session slots until detach_session) carries this client's writes to the program and its
  /// output as it comes, so write_stdin costs no command and read_output from where the
  /// previous read ended (starting at from_offset) returns as soon as the program prints. Every
  /// other operation, and a read from any other offset, stays one command. True once attached;
  /// attached already where a read from from_offset would go on, nothing is done; attached
  /// elsewhere, the old stream is closed and a new one opened there. False, changing nothing, when the
  /// backend or its route in use has no command streams (exe.dev's /exec) or has its most open
  /// (SandboxBackend over SSH: half of SshOptions::max_sessions, 5), the program has
  /// ended or is lost, or the environment's `tail` cannot follow a process (GNU coreutils'
  /// `--pid`): the operations then go on one command each. Cancellation: not attached, no
  /// stream left open.
  virtual Task<bool> attach_session(std::string name, std::uint64_t from_offset) = 0;

  /// Closes the session's stream (its slot is free again); the session runs on. Not attached:
  /// nothing to do. Not cancellable (it is short).
  virtual Task<void> detach_session(std::string name) = 0;

  /// Stops the program if it runs (SIGTERM to its group, SIGKILL after 3 s) and deletes the
  /// session's state (a lost one's at once: nothing is signalled). Cancelled: the program may be stopped and its state left; remove it again.
  virtual Task<void> remove_session(std::string name) = 0;
};

/// Hands session `name`'s output from `from_offset` to `on_output` as it comes, one read at a
/// time (read_output, each waiting up to max_read_wait: on an attached session each piece as the
/// program prints it), until the program has ended and everything was read; returns that last
/// read (its exit, or lost; next_offset is the end of the output). Each read is given whole
/// (data, offset, dropped_bytes), also the last one. `on_output` runs on the caller's executor;
/// what it throws stops following and is thrown. Errors as read_output. Cancellation: stops at
/// once; the reads done have been handed over, nothing else changed.
Task<SessionOutput> follow_output(SupportsProcessSessions& sessions, std::string name, std::uint64_t from_offset,
                                  std::function<void(const SessionOutput&)> on_output);

/// The shell-derived implementation: a backend derives from it beside SupportsCommands (and
/// WorkspaceBackend, for the default cwd) and gets every operation, run through its own
/// SupportsShellScripts::run_script when it has one, else SupportsCommands::run. Needs POSIX sh,
/// base64, mkfifo, setsid, stty, timeout and (for a pty) util-linux `script` in the environment;
/// start_session() names what is missing. Linux only (a pty's foreground group is read from /proc).
class ShellProcessSessions : public SupportsProcessSessions {
 public:
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
  Task<bool> attach_session(std::string name, std::uint64_t from_offset) override;
  Task<void> detach_session(std::string name) override;

  /// Whether `name` is attached on this object (attach_session).
  [[nodiscard]] bool session_attached(const std::string& name) const;
  /// Detaches every session attached on this object (the sessions run on). Streams hold I/O
  /// objects of the executor they were opened on (SandboxBackend: the SSH connection's): a
  /// backend with sessions attached is destroyed, or detaches them, before that executor's
  /// io_context goes (SandboxBackend::close() detaches them). Not cancellable (it is short).
  Task<void> detach_all_sessions();

 private:
  // The attached session's write; false when it must go as a command.
  Task<bool> write_attached(const std::string& name, const Bytes& data);
  // The attached session's read from `from_offset`, or nullopt when it must go as a command.
  Task<std::optional<SessionOutput>> read_attached(const std::string& name, std::uint64_t from_offset,
                                                   std::size_t max_bytes, std::chrono::milliseconds wait);
  // Closes the stream once no operation uses it.
  Task<void> release_attachment(std::shared_ptr<detail::SessionAttachment> attachment);
  // Where this object's attached sessions stand (process_sessions_attached.cpp).
  std::map<std::string, std::shared_ptr<detail::SessionAttachment>> attachments_;

  /// Runs `script` with base64 `args` through the backend this object is part of.
  Task<CommandResult> session_script(std::string script, std::vector<std::string> args, bool idempotent);
};

}  // namespace exedev::workspace
