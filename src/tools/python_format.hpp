#pragma once
// Python's text forms of values that tool results quote (internal): `repr(str)` and
// `repr(float)`, so results read as the reference harness writes them.

#include <string>
#include <string_view>

namespace exedev::tools::detail {

/// Python's repr() of a str given as UTF-8: single quotes unless the text holds ' and no ",
/// backslash escapes for \\, the quote, \t \n \r, \xNN for other control characters, and
/// \xNN/\uNNNN for the non-printable code points listed in python_format.cpp (Python consults
/// the Unicode database; this covers controls, format characters, separators and private use).
/// Invalid UTF-8 bytes are written \xNN, as Python writes surrogate-escaped bytes (\udcNN).
[[nodiscard]] std::string python_repr(std::string_view text);

/// Python's repr() of a float: the shortest round-trip digits, fixed notation with at least one
/// fractional digit for exponents -4..15 ("30.0", "0.5"), else scientific ("1e-05", "1e+16").
[[nodiscard]] std::string python_float(double value);

/// Python's format(value, 'g') (C's %g): six significant digits, no trailing zeros ("270").
[[nodiscard]] std::string python_g(double value);

}  // namespace exedev::tools::detail
