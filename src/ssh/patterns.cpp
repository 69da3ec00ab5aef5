#include "ssh/patterns.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace exedev::ssh {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool wildcard_match(std::string_view text, std::string_view pattern) {
  std::size_t t = 0, p = 0, star = std::string_view::npos, star_text = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++t, ++p;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, star_text = t;
    } else if (star != std::string_view::npos) {
      p = star + 1, t = ++star_text;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool match_pattern_list(std::string_view text, std::string_view patterns) {
  const std::string subject = lowercase(text);
  bool matched = false;
  while (true) {
    const auto comma = patterns.find(',');
    std::string_view pattern = patterns.substr(0, comma);
    const bool negated = pattern.starts_with('!');
    if (negated) pattern.remove_prefix(1);
    if (wildcard_match(subject, lowercase(pattern))) {
      if (negated) return false;
      matched = true;
    }
    if (comma == std::string_view::npos) break;
    patterns.remove_prefix(comma + 1);
  }
  return matched;
}

}  // namespace exedev::ssh
