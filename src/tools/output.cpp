#include "tools/output.hpp"

#include "tools/text.hpp"

namespace exedev::tools::detail {

std::string truncate_tail(const std::string& text, std::size_t max_chars) {
  const std::size_t length = utf8_length(text);
  if (length <= max_chars) return text;
  // The marker's own length depends on N's digits; find the largest N that fits with it.
  for (std::size_t kept = max_chars; kept > 0; --kept) {
    const std::string marker = "[... output truncated, showing last " + std::to_string(kept) + " chars]\n";
    const std::size_t marker_length = marker.size();  // ASCII
    if (marker_length + kept <= max_chars) return marker + utf8_tail(text, kept);
    if (marker_length >= max_chars) break;
  }
  return utf8_tail(text, max_chars);
}

}  // namespace exedev::tools::detail
