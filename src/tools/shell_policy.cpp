#include "tools/shell_policy.hpp"

#include "tools/paths.hpp"
#include "tools/text.hpp"

#include <algorithm>

namespace exedev::tools::detail {

namespace {

// Python's str.strip() whitespace among ASCII: space, \t \n \v \f \r and \x1c-\x1f.
bool is_strip_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1C && c <= 0x1F); }

// A character `\w` matches in Python: ASCII letters, digits, `_`, and (approximately) any
// non-ASCII character, since what follows a command name directly is almost always a letter.
bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

std::string_view strip(std::string_view text) {
  while (!text.empty() && is_strip_space(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && is_strip_space(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

}  // namespace

std::optional<std::vector<std::string>> shlex_split(std::string_view text) {
  // shlex in POSIX mode with whitespace_split: words are separated by ' \t\r\n'; '...' is
  // literal; "..." allows \" and \\ only; outside quotes a backslash escapes any character.
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const auto close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      word.append(text.substr(i + 1, close - i - 1));
      i = close;
      in_word = true;
    } else if (c == '"') {
      std::size_t k = i + 1;
      for (;; ++k) {
        if (k >= text.size()) return std::nullopt;
        if (text[k] == '"') break;
        if (text[k] == '\\') {
          if (k + 1 >= text.size()) return std::nullopt;
          if (text[k + 1] != '"' && text[k + 1] != '\\') word += '\\';
          word += text[++k];
        } else {
          word += text[k];
        }
      }
      i = k;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return std::nullopt;
      word += text[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

bool is_interactive_command(std::string_view command) {
  const auto text = strip(command);
  const auto word_then_boundary = [&](std::string_view word) {
    return text.substr(0, word.size()) == word &&
           (text.size() == word.size() || !is_word_byte(static_cast<unsigned char>(text[word.size()])));
  };
  for (const std::string_view word : {"vi", "vim", "nano", "emacs", "less", "more", "top", "htop", "man", "passwd",
                                      "ssh", "telnet", "ftp"}) {
    if (word_then_boundary(word)) return true;
  }
  // `^sudo\s`: a whitespace character must follow.
  return text.size() > 4 && text.substr(0, 4) == "sudo" && is_strip_space(static_cast<unsigned char>(text[4]));
}

std::optional<std::string> command_refusal(const CommandPolicy& policy, std::string_view command) {
  if (command.find('\0') != std::string_view::npos) {
    return "The command contains a NUL byte, which cannot be passed to a process.";
  }
  if (!workspace::is_valid_utf8(command)) {
    return "The command contains characters that cannot be encoded for the operating system.";
  }
  if (!policy.allow_interactive && is_interactive_command(command)) {
    return "Interactive commands are not allowed. Command: " + python_repr(command);
  }
  for (const auto& op : policy.denied_operators) {
    if (command.find(op) != std::string_view::npos) return "Shell operator " + python_repr(op) + " is not allowed.";
  }
  const auto words = shlex_split(command);
  if (!words || words->empty()) return std::nullopt;
  const auto& executable = words->front();
  const auto listed = [&](const std::vector<std::string>& list) {
    return std::find(list.begin(), list.end(), executable) != list.end();
  };
  if (!policy.denied_commands.empty() && listed(policy.denied_commands)) {
    return "Command " + python_repr(executable) + " is denied.";
  }
  if (!policy.allowed_commands.empty() && !listed(policy.allowed_commands)) {
    return "Command " + python_repr(executable) + " is not in the allowed list.";
  }
  return std::nullopt;
}

workspace::Env filter_env(const workspace::Env& env, const std::vector<std::string>& denied_patterns) {
  workspace::Env kept;
  // (An entry, not a structured binding: Clang 14 cannot capture bindings in the lambda.)
  for (const auto& entry : env) {
    const bool denied = std::any_of(denied_patterns.begin(), denied_patterns.end(),
                                    [&](const std::string& pattern) { return fnmatch_python(entry.first, pattern); });
    if (!denied) kept.insert(entry);
  }
  return kept;
}

}  // namespace exedev::tools::detail
