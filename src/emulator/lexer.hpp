#pragma once
// The exe.dev lobby lexer: an exact port of github.com/anmitsu/go-shlex Split(s, posix=true),
// which /exec applies to the trimmed request body (spec §1.2).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::emulator {

struct LexResult {
  std::vector<std::string> words;
  /// Set on a syntax error: "No closing quotation" or "No escaped character".
  std::optional<std::string> error;
};

/// Splits a command line. Invalid UTF-8 bytes become U+FFFD, as Go's rune reader does; empty
/// words (`''`, `""`) are dropped.
LexResult lex(std::string_view line);

/// Go's strings.TrimSpace: removes leading and trailing Unicode white space.
std::string_view trim_space(std::string_view text);

/// Go's unicode.IsSpace.
bool is_go_space(char32_t rune);

}  // namespace exedev::emulator
