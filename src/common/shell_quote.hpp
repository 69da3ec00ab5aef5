#pragma once
// Quoting words for a POSIX shell (and for exe.dev's lobby lexer, which reads sh quoting).
// Internal, sans-IO; the public workspace::shell_quote is built on it.

#include <string>
#include <string_view>

namespace exedev::detail {

/// Always single-quoted, each ' written as '"'"' (shlex.quote's escape, which the public
/// shell_quote documents): 'it'"'"'s'. The empty word gives ''.
[[nodiscard]] std::string sh_single_quote(std::string_view word);

/// Like Python's shlex.quote: a non-empty word of only ASCII word characters and @%+=:,./-
/// stays bare, anything else is sh_single_quote'd.
[[nodiscard]] std::string sh_quote_if_needed(std::string_view word);

}  // namespace exedev::detail
