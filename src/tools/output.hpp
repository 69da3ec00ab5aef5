#pragma once
// Capping what a tool returns to the model (workspaces-api.md §4.1 truncate_tail).

#include <cstddef>
#include <string>

namespace exedev::tools::detail {

/// `text` when it has at most `max_chars` characters (Unicode code points of UTF-8 text);
/// otherwise its tail behind "[... output truncated, showing last N chars]\n", where the
/// marker counts toward the cap and N is exactly the number of characters kept. When the cap
/// leaves no room for the marker, the bare tail of `max_chars` characters.
[[nodiscard]] std::string truncate_tail(const std::string& text, std::size_t max_chars);

}  // namespace exedev::tools::detail
