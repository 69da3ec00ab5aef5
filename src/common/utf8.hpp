#pragma once
// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), decoded
// one sequence at a time. Internal, sans-IO; the public workspace::is_valid_utf8 and
// workspace::utf8_replace_invalid are built on it.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::detail {

/// Why a sequence is not valid UTF-8.
enum class Utf8Fault {
  none,
  invalid_start,         ///< a byte that cannot begin a sequence
  invalid_continuation,  ///< a sequence cut short by a byte that cannot continue it
  truncated,             ///< the text ends inside the sequence
};

/// One sequence read from some position of a text.
struct Utf8Sequence {
  /// The length of the valid sequence, or of the maximal invalid subpart: Unicode's "best
  /// practice" for U+FFFD substitution (what Python's decoder does). Never 0.
  std::size_t length = 0;
  std::optional<char32_t> code_point;  ///< nullopt when invalid
  Utf8Fault fault = Utf8Fault::none;
};

/// Whether `byte` continues a sequence (10xxxxxx) rather than starting one.
[[nodiscard]] constexpr bool is_utf8_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

/// The sequence that starts at `text[at]` (`at` < text.size()).
[[nodiscard]] Utf8Sequence utf8_sequence_at(std::string_view text, std::size_t at);

[[nodiscard]] bool is_valid_utf8(std::string_view text);

/// Each maximal invalid subpart becomes one U+FFFD; valid text is returned unchanged.
[[nodiscard]] std::string utf8_replace_invalid(std::string_view text);

/// The code points of valid text, or nullopt when it is not valid UTF-8.
[[nodiscard]] std::optional<std::vector<char32_t>> utf8_code_points(std::string_view text);

/// Appends `code_point` (at most U+10FFFF) encoded as UTF-8.
void append_utf8(std::string& out, char32_t code_point);

}  // namespace exedev::detail
