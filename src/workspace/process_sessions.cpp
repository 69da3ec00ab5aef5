// ShellProcessSessions: each operation validates its arguments, sends one script of
// process_sessions_scripts.cpp through the backend it is part of, and parses the answer.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <exedev/workspace/errors.hpp>
#include <exedev/workspace/sessions.hpp>

#include "common/base64.hpp"
#include "common/inert_text.hpp"
#include "workspace/process_sessions.hpp"
#include "workspace/shell_filesystem.hpp"
#include "workspace/shell_scripts.hpp"

namespace exedev::workspace {

using exedev::detail::base64_encode;

namespace {

constexpr std::uint16_t kMaxTerminalSide = 9999;

using detail::is_name_char;

void validate_env_key(const std::string& key) {
  const bool valid = !key.empty() && !(key[0] >= '0' && key[0] <= '9') &&
                     std::all_of(key.begin(), key.end(), [](char c) { return c != '.' && c != '-' && is_name_char(c); });
  if (!valid) throw std::invalid_argument("process session env names must match [A-Za-z_][A-Za-z0-9_]*");
}

void validate_terminal_size(TerminalSize size) {
  if (size.rows == 0 || size.cols == 0 || size.rows > kMaxTerminalSide || size.cols > kMaxTerminalSide) {
    throw std::invalid_argument("terminal rows and cols must be 1 to 9999");
  }
}

void validate_spec(const ProcessSessionSpec& spec) {
  const bool empty = spec.command.is_shell() ? spec.command.line().empty() : spec.command.args().empty();
  if (empty) throw std::invalid_argument("a process session needs a command");
  for (const auto& [key, value] : spec.env) validate_env_key(key);
  if (spec.pty) {
    validate_terminal_size(spec.size);
    const bool term_valid = !spec.term.empty() && std::all_of(spec.term.begin(), spec.term.end(), is_name_char);
    if (!term_valid) throw std::invalid_argument("a process session's TERM must be 1 or more of [A-Za-z0-9_.-]");
  }
  if (spec.max_output_bytes < detail::kSessionTrimStep) {
    throw std::invalid_argument("ProcessSessionSpec::max_output_bytes must be at least 64 KiB");
  }
}

/// Long-poll rounds of the scripts' poll step in `wait` (at least one check, none after it).
int polls_within(std::chrono::milliseconds wait) {
  return static_cast<int>(wait.count() / detail::kSessionPollMilliseconds);
}

}  // namespace

void validate_session_name(const std::string& name) {
  if (!detail::is_session_name(name)) {
    throw std::invalid_argument(
        "a process session name is 1 to 64 of [A-Za-z0-9_.-], not starting with '.' or '-'");
  }
}

const std::vector<std::string>& session_signal_names() {
  static const std::vector<std::string> names = {"INT",  "TERM",  "KILL", "HUP",  "QUIT", "USR1",
                                                 "USR2", "WINCH", "CONT", "STOP", "TSTP", "ALRM"};
  return names;
}

Task<SessionOutput> follow_output(SupportsProcessSessions& sessions, std::string name, std::uint64_t from_offset,
                                  std::function<void(const SessionOutput&)> on_output) {
  if (!on_output) throw std::invalid_argument("follow_output needs a callback");
  auto offset = from_offset;
  while (true) {
    auto output = co_await sessions.read_output(name, offset, SupportsProcessSessions::max_read_bytes,
                                                SupportsProcessSessions::max_read_wait);
    on_output(output);
    if (output.complete) co_return output;
    offset = output.next_offset;
  }
}

Task<CommandResult> ShellProcessSessions::session_script(std::string script, std::vector<std::string> args,
                                                          bool idempotent) {
  auto* commands = dynamic_cast<SupportsCommands*>(this);
  if (commands == nullptr) throw WorkspaceUsageError("process sessions need a backend that runs commands");
  auto* scripts = dynamic_cast<SupportsShellScripts*>(this);
  co_return co_await detail::run_shell_script(*commands, scripts, std::move(script), std::move(args), idempotent);
}

Task<void> ShellProcessSessions::start_session(std::string name, ProcessSessionSpec spec) {
  validate_session_name(name);
  validate_spec(spec);
  std::string cwd = spec.cwd.value_or(std::string{});
  if (cwd.empty() || cwd.front() != '/') {
    auto* backend = dynamic_cast<WorkspaceBackend*>(this);
    if (backend == nullptr) throw WorkspaceUsageError("process sessions need an absolute cwd on this backend");
    const auto base = co_await backend->working_dir();
    cwd = detail::posix_join(base, cwd);
  }
  auto script = detail::session_start_script(name, spec, cwd);
  std::vector<std::string> args{base64_encode(spec.command.to_shell_line())};
  const auto result = co_await session_script(std::move(script), std::move(args), false);
  if (result.exit_code == detail::kSessionMissingTools) {
    std::string tools;
    for (const auto& tool : detail::parse_session_missing_tools(result.stdout_text)) tools += " " + tool;
    throw WorkspaceUsageError("process sessions need programs the environment lacks:" + tools);
  }
  detail::raise_for_session_status(result, name, "start");
  co_await detach_session(name);  // a stream into the ended session this one replaced
}

Task<void> ShellProcessSessions::write_stdin(std::string name, Bytes data) {
  validate_session_name(name);
  if (data.empty()) throw std::invalid_argument("a process session write needs at least one byte");
  if (data.size() > max_write_bytes) {
    throw std::invalid_argument(fmt::format("a process session write takes at most {} bytes", max_write_bytes));
  }
  const bool written = co_await write_attached(name, data);
  if (written) co_return;
  std::vector<std::string> args{base64_encode(data)};
  const auto result = co_await session_script(detail::session_write_script(name), std::move(args), false);
  detail::raise_for_session_status(result, name, "write");
}

Task<void> ShellProcessSessions::close_stdin(std::string name) {
  validate_session_name(name);
  // An attached stream holds the FIFO open for writing: pipes would never see EOF while it does.
  co_await detach_session(name);
  const auto result = co_await session_script(detail::session_close_stdin_script(name), {}, false);
  detail::raise_for_session_status(result, name, "close_stdin");
}

Task<SessionOutput> ShellProcessSessions::read_output(std::string name, std::uint64_t from_offset, std::size_t max_bytes,
                                               std::chrono::milliseconds wait) {
  validate_session_name(name);
  if (max_bytes == 0 || max_bytes > max_read_bytes) {
    throw std::invalid_argument(fmt::format("max_bytes must be 1 to {}", max_read_bytes));
  }
  // The environment's shell counts in signed 64 bits.
  if (from_offset > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw std::invalid_argument("from_offset must be below 2^63");
  }
  if (wait < std::chrono::milliseconds::zero() || wait > max_read_wait) {
    throw std::invalid_argument("a process session read waits 0 to 20 s");
  }
  auto attached = co_await read_attached(name, from_offset, max_bytes, wait);
  if (attached) co_return std::move(*attached);
  auto script = detail::session_read_script(name, from_offset, max_bytes, polls_within(wait));
  const auto result = co_await session_script(std::move(script), {}, true);
  detail::raise_for_session_status(result, name, "read");
  co_return detail::parse_session_read(result.stdout_text, name, from_offset, max_bytes);
}

Task<void> ShellProcessSessions::resize_terminal(std::string name, TerminalSize size) {
  validate_session_name(name);
  validate_terminal_size(size);
  const auto result = co_await session_script(detail::session_resize_script(name, size), {}, true);
  detail::raise_for_session_status(result, name, "resize");
}

Task<void> ShellProcessSessions::signal_session(std::string name, std::string signal) {
  validate_session_name(name);
  const auto& allowed = session_signal_names();
  if (std::find(allowed.begin(), allowed.end(), signal) == allowed.end()) {
    throw std::invalid_argument("not a signal process sessions send (session_signal_names())");
  }
  const auto result = co_await session_script(detail::session_signal_script(name, signal), {}, false);
  detail::raise_for_session_status(result, name, "signal");
}

Task<SessionExit> ShellProcessSessions::wait_session(std::string name, std::chrono::milliseconds timeout) {
  validate_session_name(name);
  if (timeout <= std::chrono::milliseconds::zero()) throw std::invalid_argument("a wait's timeout must be positive");
  // Counted in poll rounds, not wall-clock time: each script waits at most max_read_wait.
  auto remaining = timeout;
  while (true) {
    const auto round = std::min(remaining, max_read_wait);
    const auto result = co_await session_script(detail::session_wait_script(name, polls_within(round)), {}, true);
    detail::raise_for_session_status(result, name, "wait");
    const auto status = detail::parse_session_wait(result.stdout_text, name);
    if (status) co_return *status;
    remaining -= round;
    if (remaining <= std::chrono::milliseconds::zero()) {
      throw WorkspaceTimeoutError(fmt::format("process session '{}' did not end within {} ms", name, timeout.count()),
                                  PartialOutput{});
    }
  }
}

Task<std::vector<SessionInfo>> ShellProcessSessions::list_sessions() {
  const auto result = co_await session_script(detail::session_list_script(), {}, true);
  detail::raise_for_session_status(result, "(list)", "list");
  co_return detail::parse_session_list(result.stdout_text);
}

Task<void> ShellProcessSessions::remove_session(std::string name) {
  validate_session_name(name);
  co_await detach_session(name);
  const auto result = co_await session_script(detail::session_remove_script(name), {}, false);
  detail::raise_for_session_status(result, name, "remove");
}

namespace detail {

bool is_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

bool is_session_name(std::string_view name) {
  return !name.empty() && name.size() <= kMaxSessionNameLength && name[0] != '.' && name[0] != '-' &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

void raise_for_session_status(const CommandResult& result, const std::string& name, const char* operation) {
  const auto what = [&](const char* text) { return fmt::format("process session '{}': {}", name, text); };
  switch (result.exit_code) {
    case 0: return;
    case kSessionUnknown: throw WorkspaceUsageError(what("no such session"));
    case kSessionExists: throw WorkspaceUsageError(what("a session of that name is running"));
    case kSessionNotPty: throw WorkspaceUsageError(what("not a pseudo-terminal session"));
    case kSessionStdinClosed: throw WorkspaceError(what("stdin was closed"));
    case kSessionEnded: throw WorkspaceError(what("the program has ended"));
    case kSessionUnsafeRoot:
      throw WorkspaceError(what("the state directory /tmp/exedev-sessions-<uid> is a symlink or another user's"));
    case kSessionNotStarted: throw WorkspaceError(what("the holder did not start the program within 10 s"));
    case kSessionLost: throw WorkspaceError(what("its holder and program are gone without recording how it ended"));
    case kSessionTimeout:
      throw WorkspaceTimeoutError(what("stdin did not take the bytes within 10 s (part may have been delivered)"),
                                  PartialOutput{result.stdout_text, result.stderr_text});
    default: break;
  }
  const auto reason = strip(result.stderr_text);
  const auto message = fmt::format("process session '{}': {} failed (exit {}){}{}", name, operation, result.exit_code,
                                   reason.empty() ? "" : ": ", exedev::detail::inert_text(reason));
  throw WorkspaceScriptError(message, PartialOutput{result.stdout_text, result.stderr_text});
}

}  // namespace detail

}  // namespace exedev::workspace
