#pragma once
// The Shell tools' command policy (internal, sans-IO): what a command must not be or contain
// before it runs, and which environment variables a command receives. Best effort, not a
// security boundary: a determined model gets around a word list; isolation belongs to the
// workspace (a VM, a container).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <exedev/workspace/types.hpp>

namespace exedev::tools::detail {

/// Python's shlex.split(text) (POSIX mode, no comments): the words of `text`, or nullopt when
/// it cannot be split (an unclosed quote, a trailing backslash).
[[nodiscard]] std::optional<std::vector<std::string>> shlex_split(std::string_view text);

/// Whether `command` starts an editor, pager or login (the reference's regexes
/// `^(vi|vim|nano|emacs|less|more|top|htop|man)\b`, `^sudo\s`, `^passwd\b`, `^ssh\b`,
/// `^telnet\b`, `^ftp\b` on the stripped command).
[[nodiscard]] bool is_interactive_command(std::string_view command);

struct CommandPolicy {
  std::vector<std::string> allowed_commands{};
  std::vector<std::string> denied_commands{};
  std::vector<std::string> denied_operators{};
  bool allow_interactive = false;
};

/// Why `command` may not run, as the model is told (a retry), or nullopt when it may. In order:
/// a NUL byte, text the OS cannot take (invalid UTF-8), an interactive command, the first denied
/// operator found as a substring, then the first shlex word against the deny or allow list
/// (a command shlex cannot split passes).
[[nodiscard]] std::optional<std::string> command_refusal(const CommandPolicy& policy, std::string_view command);

/// `env` minus the names that match any of `denied_patterns` (fnmatch.fnmatchcase).
[[nodiscard]] workspace::Env filter_env(const workspace::Env& env, const std::vector<std::string>& denied_patterns);

}  // namespace exedev::tools::detail
