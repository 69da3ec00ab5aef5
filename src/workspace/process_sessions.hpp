#pragma once
// The shell-derived process sessions' sans-IO half (internal): the POSIX sh scripts each
// operation sends, and strict parsers of what comes back. The coroutines that send them are in
// process_sessions.cpp; docs/workspace.md ("Process sessions") describes the holder.
//
// State directory of session N: /tmp/exedev-sessions-<uid>/N (0700), holding
//   in       a FIFO: the program's stdin (pty: read by `script`; pipes: by the program)
//   out      the output log (pty: what the terminal shows; pipes: stdout and stderr merged)
//   exit     the holder's status when the program ended, written by rename
//   pid      the program's pid, which leads its own session and process group
//   tty      pty only: the terminal's slave path, for resize and the foreground group
//   keeper   pipes only: the pid holding stdin's FIFO open for writing (close_stdin stops it)
//   pty, started, command, keep   what start() recorded (keep: max_output_bytes)
//   trimmed  bytes at the log's start released by hole punching
//   holder, run   the holder script and the program's launcher
//   holder.pid    the holder's pid: a session whose holder and program are both gone with no
//                 `exit` is lost (killed from outside)

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/workspace/backend.hpp>
#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/sessions.hpp>

namespace exedev::workspace::detail {

/// Exit codes of the session scripts (beside 0).
enum SessionScriptStatus : int {
  kSessionUnsafeRoot = 101,   ///< the state root is a symlink or not ours
  kSessionUnknown = 102,      ///< no session of that name
  kSessionEnded = 103,        ///< the program has ended
  kSessionMissingTools = 104, ///< stdout: `missing <tool>...`
  kSessionNotStarted = 105,   ///< the holder did not record the program within the start bound
  kSessionLost = 106,         ///< the holder and the program are gone with no status recorded
  kSessionStdinClosed = 109,  ///< pipes stdin was closed by close_stdin
  kSessionNotPty = 110,       ///< resize of a pipes session
  kSessionNoFollow = 111,     ///< attach: `tail` cannot follow a process (not GNU coreutils')
  kSessionExists = 117,       ///< a live session of that name
  kSessionTimeout = 124,      ///< `timeout` stopped the write (GNU and busybox status)
};

/// The longest session name.
inline constexpr std::size_t kMaxSessionNameLength = 64;
/// A character of a session name: [A-Za-z0-9_.-].
[[nodiscard]] bool is_name_char(char c);
/// What validate_session_name accepts.
[[nodiscard]] bool is_session_name(std::string_view name);

/// Seconds a write may take to be accepted by the program's stdin.
inline constexpr int kSessionWriteTimeoutSeconds = 10;
/// Seconds start() waits for the holder to record the program.
inline constexpr int kSessionStartSeconds = 10;
/// remove(): seconds between SIGTERM and SIGKILL.
inline constexpr int kSessionGraceSeconds = 3;
/// The long polls' step (read, wait).
inline constexpr int kSessionPollMilliseconds = 50;
/// The log is released in steps of this many bytes (hole punching works in whole blocks).
inline constexpr std::uint64_t kSessionTrimStep = 64 * 1024;

/// The shell line that runs `command` (an argv quoted, or the line itself under /bin/sh -c) after
/// `exec`.
[[nodiscard]] std::string session_exec_words(const Command& command);

/// Checks the tools, creates the state directory (refusing a live session of that name), writes
/// the holder and launcher and starts the holder with `setsid -f`, then waits for the program's
/// pid. $1 is the base64 of the command as recorded. `cwd` is absolute.
[[nodiscard]] std::string session_start_script(const std::string& name, const ProcessSessionSpec& spec,
                                               const std::string& cwd);
/// Decodes $1 (base64) into stdin, bounded by kSessionWriteTimeoutSeconds.
[[nodiscard]] std::string session_write_script(const std::string& name);
[[nodiscard]] std::string session_close_stdin_script(const std::string& name);
/// Waits up to `wait_polls` polls for output past `from` or the program's end, releases the log
/// past its `keep` bytes, then prints the read header (parse_session_read) and up to `max_bytes`
/// bytes in base64.
[[nodiscard]] std::string session_read_script(const std::string& name, std::uint64_t from, std::size_t max_bytes,
                                              int wait_polls);
/// Releases the log past the session's `keep` bytes, as a read does (for attached sessions,
/// whose reads are not commands).
[[nodiscard]] std::string session_trim_script(const std::string& name);
/// A command stream's script attaching the session from offset `from`: prints the header
/// (parse_session_attach_header), then the log from there on as it grows, until the holder
/// ends; writes what arrives on its stdin to the program's. Refused (ended, lost, unknown, no
/// GNU `tail`), it prints `refused <status>` and exits.
[[nodiscard]] std::string session_attach_script(const std::string& name, std::uint64_t from);
[[nodiscard]] std::string session_resize_script(const std::string& name, TerminalSize size);
/// `signal` must be one of session_signal_names().
[[nodiscard]] std::string session_signal_script(const std::string& name, const std::string& signal);
/// Prints `exit <status>` once the program has ended (within `wait_polls` polls), else `running`.
[[nodiscard]] std::string session_wait_script(const std::string& name, int wait_polls);
[[nodiscard]] std::string session_list_script();
[[nodiscard]] std::string session_remove_script(const std::string& name);

/// The holder's status, as the `exit` file holds it: digits 0-255. Anything else is damaged.
[[nodiscard]] std::optional<SessionExit> parse_session_exit(std::string_view text);

/// read's output: `exit <status>|-|lost`, `size <n>`, `start <n>`, `count <n>` lines, then the base64
/// of `count` bytes. Throws SessionOutputError for anything that is not exactly that, or numbers
/// that do not fit what was asked (a count above max_bytes, a start before from_offset that is
/// not a drop, a start + count past size).
[[nodiscard]] SessionOutput parse_session_read(const std::string& stdout_text, const std::string& name,
                                               std::uint64_t from_offset, std::size_t max_bytes);
/// wait's output: `exit <status>` (set) or `running` (unset); `exit lost` throws WorkspaceError.
[[nodiscard]] std::optional<SessionExit> parse_session_wait(const std::string& stdout_text, const std::string& name);
/// list's records: `session <name> <status>|-|lost <0|1> <epoch seconds>|- <base64 command>|-`.
/// A record whose name is not a valid session name is skipped (another program's directory).
[[nodiscard]] std::vector<SessionInfo> parse_session_list(const std::string& stdout_text);
/// start's `missing <tool>...` line as the tools' names (only names of the expected tools).
[[nodiscard]] std::vector<std::string> parse_session_missing_tools(const std::string& stdout_text);

/// The most bytes an attach header takes, newline included.
inline constexpr std::size_t kMaxAttachHeaderBytes = 96;

/// What an attach stream says first: `attached <start> <keep> <0|1>` (the log's offset the
/// stream starts at, the session's max_output_bytes, whether stdin takes writes) or `refused
/// <status>` (a session script status).
struct SessionAttachHeader {
  std::optional<int> refused{};
  std::uint64_t start = 0;
  std::uint64_t keep = 0;
  bool writable = false;
};
/// `line` without its newline. Throws SessionOutputError for anything else, a start before `from`
/// (it may only be later, past released bytes), a keep below 64 KiB or a status that is not 1-255.
[[nodiscard]] SessionAttachHeader parse_session_attach_header(std::string_view line, const std::string& name,
                                                              std::uint64_t from);

/// Output of a session script that is not what it prints.
class SessionOutputError : public WorkspaceError {
 public:
  explicit SessionOutputError(const std::string& name);
};

/// Throws what a session script's exit status means for session `name` (returns for 0).
void raise_for_session_status(const CommandResult& result, const std::string& name, const char* operation);

}  // namespace exedev::workspace::detail
