#pragma once
// Value types of the workspace protocol: what a command is, what it returns, what a file is,
// and the serializable identity of an environment.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/string_list.hpp>

namespace exedev::workspace {

/// Raw bytes (file contents, command output before decoding). A std::string is used as the
/// byte container so that contents move without copies into text APIs.
using Bytes = std::string;

/// Environment variables layered over a backend's own environment.
using Env = std::map<std::string, std::string>;

/// Seconds, fractional allowed. Must be positive and finite (see validate_timeout).
using Seconds = std::chrono::duration<double>;

/// Serializable identity of a workspace environment, without credentials.
/// Pass it to a later run to continue in the same environment.
struct WorkspaceRef {
  std::string provider{};  ///< Provider that owns the environment, e.g. "local", "exedev".
  std::string id{};        ///< Provider-specific identifier.
  EXEDEV_COAWAIT_GUARD;

  friend bool operator==(const WorkspaceRef&, const WorkspaceRef&) = default;

  /// `{"provider": "…", "id": "…"}`, as Python's json.dumps writes it. Throws
  /// std::invalid_argument if a field is not valid UTF-8.
  [[nodiscard]] std::string to_json() const;
  /// Parses to_json()'s form; throws std::invalid_argument on anything else.
  [[nodiscard]] static WorkspaceRef from_json(const std::string& json);
};

/// The result of a completed command. A non-zero exit code is a normal result, never an error.
struct CommandResult {
  int exit_code = 0;
  std::string stdout_text;  ///< Captured stdout, UTF-8; undecodable bytes become U+FFFD.
  std::string stderr_text;  ///< Captured stderr, UTF-8; undecodable bytes become U+FFFD.

  friend bool operator==(const CommandResult&, const CommandResult&) = default;
};

/// Metadata about a file or directory.
struct FileEntry {
  std::string name;                   ///< Base name.
  std::string path;                   ///< Absolute POSIX path inside the workspace.
  bool is_dir = false;                ///< Follows a symlink to its target.
  std::optional<std::uint64_t> size;  ///< Regular file size when known.

  friend bool operator==(const FileEntry&, const FileEntry&) = default;
};

/// What to run: an argv vector passed literally, or a string for the workspace's shell.
/// The two forms are distinct types, so the reference API's "string without shell=True"
/// TypeError cannot happen in C++.
class Command {
 public:
  /// argv[0] is the program, looked up on PATH; every item is passed literally.
  /// An empty argv is rejected by Workspace::run with std::invalid_argument.
  static Command argv(StringList argv) { return Command(Argv{std::move(argv).items()}); }
  /// A command line for `/bin/sh -c` (or the environment's shell).
  static Command shell(std::string line) { return Command(Shell{std::move(line)}); }

  [[nodiscard]] bool is_shell() const { return std::holds_alternative<Shell>(form_); }
  /// The argv; precondition: !is_shell().
  [[nodiscard]] const std::vector<std::string>& args() const { return std::get<Argv>(form_).items; }
  /// The shell line; precondition: is_shell().
  [[nodiscard]] const std::string& line() const { return std::get<Shell>(form_).text; }

  /// The command as one POSIX shell line: the shell line itself, or each argv item
  /// single-quoted. This is how remote backends send an argv to a shell.
  [[nodiscard]] std::string to_shell_line() const;

 private:
  struct Argv { std::vector<std::string> items; };
  struct Shell { std::string text; };
  explicit Command(std::variant<Argv, Shell> form) : form_(std::move(form)) {}
  std::variant<Argv, Shell> form_;
};

/// Receives a command's output as it arrives: raw bytes, in order, possibly split anywhere
/// (even inside a UTF-8 sequence). Called on the caller's executor; it must not block.
/// An exception it throws stops the command and propagates from run().
using OutputCallback = std::function<void(std::string_view chunk)>;

/// Per-call options of run().
struct RunOptions {
  Env env{};                         ///< Layered over the backend's environment.
  std::optional<Seconds> timeout{};  ///< None: no timeout. Else positive and finite.
  OutputCallback on_stdout{};        ///< Live stdout, as it arrives; empty: none.
  OutputCallback on_stderr{};        ///< Live stderr, as it arrives; empty: none.
  EXEDEV_COAWAIT_GUARD;
};

/// Throws std::invalid_argument("timeout must be a positive finite number or None") for a
/// zero, negative, NaN or infinite timeout.
void validate_timeout(const std::optional<Seconds>& timeout);

/// Single-quotes `text` for a POSIX shell, like Python's shlex.quote: a string of only safe
/// characters is left bare, anything else becomes '…' with each ' written as '"'"'.
[[nodiscard]] std::string shell_quote(const std::string& text);

/// Decodes `bytes` as UTF-8 the way Python's `bytes.decode('utf-8', 'replace')` does: each
/// maximal invalid subsequence becomes one U+FFFD; valid text is returned unchanged.
/// Backends use it for command output.
[[nodiscard]] std::string utf8_replace_invalid(std::string_view bytes);

/// Output from an environment made safe to print on a terminal (environments are hostile: a
/// program's output may carry escape sequences that retitle, recolour or reprogram a terminal).
/// Lines are kept (a "\r\n" ending, as a pseudo-terminal writes it, becomes "\n"); every other
/// control character, DEL, C1 control and byte of invalid UTF-8 is written as `\xNN` and a
/// backslash as `\\`; valid UTF-8 text is unchanged. No length limit.
[[nodiscard]] std::string printable_text(std::string_view bytes);

/// Whether `bytes` is strictly valid UTF-8 (no surrogates, no overlong forms).
[[nodiscard]] bool is_valid_utf8(std::string_view bytes);

}  // namespace exedev::workspace
