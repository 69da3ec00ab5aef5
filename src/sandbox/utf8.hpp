#pragma once
// UTF-8 code points, for exe.dev's comment rules (private). Decoding command output with
// replacement is workspace::utf8_replace_invalid.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::detail {

/// The code points of valid UTF-8 text, or nullopt when it is not valid UTF-8.
[[nodiscard]] std::optional<std::vector<char32_t>> utf8_code_points(std::string_view text);

}  // namespace exedev::detail
