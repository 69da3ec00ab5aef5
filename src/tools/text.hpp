#pragma once
// Text as the reference's Python sees it: lengths in code points, str.splitlines, repr().
// Every function takes UTF-8 text (invalid bytes already replaced) unless it says otherwise.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::tools::detail {

/// Characters (code points) in UTF-8 text: Python's len(str).
[[nodiscard]] std::size_t utf8_length(std::string_view text);
/// The last `count` characters of `text`.
[[nodiscard]] std::string utf8_tail(std::string_view text, std::size_t count);
/// Python's str.splitlines(keepends): breaks at \n, \r, \r\n, \v, \f, \x1c-\x1e, U+0085,
/// U+2028 and U+2029.
[[nodiscard]] std::vector<std::string> split_lines(std::string_view text, bool keep_ends);
/// Python's str.count(part) for a non-empty part: non-overlapping occurrences.
[[nodiscard]] std::size_t count_occurrences(std::string_view text, std::string_view part);
/// Python's repr() of a str: single quotes unless the text holds ' and no ", backslash escapes
/// for \\, the quote, \t \n \r, \xNN for other control characters, and \xNN/\uNNNN for the
/// non-printable code points listed in text.cpp (Python consults the Unicode database; this
/// covers controls, format characters, separators and private use). Invalid UTF-8 bytes are
/// written \udcNN, as Python writes surrogate-escaped bytes.
[[nodiscard]] std::string python_repr(std::string_view text);
/// Python's repr() of a float: the shortest round-trip digits, fixed notation with at least one
/// fractional digit for exponents -4..15 ("30.0", "0.5"), else scientific ("1e-05", "1e+16").
[[nodiscard]] std::string python_float(double value);
/// Python's format(value, 'g') (C's %g): six significant digits, no trailing zeros ("270").
[[nodiscard]] std::string python_g(double value);
/// `value` with thousands separators, as Python's f"{value:,}".
[[nodiscard]] std::string with_thousands(std::size_t value);
/// Why `bytes` is not strict UTF-8, in the words of Python's UnicodeDecodeError
/// ("'utf-8' codec can't decode byte 0xff in position 3: invalid start byte"); nullopt when it is.
[[nodiscard]] std::optional<std::string> utf8_decode_error(std::string_view bytes);

}  // namespace exedev::tools::detail
