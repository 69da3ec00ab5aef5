#include "emulator/validation.hpp"

#include "common/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <regex>

namespace exedev::emulator {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool has_prefix_then_digits(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix && all_digits(s.substr(prefix.size()));
}

// Names that collide with exe.dev's own hosts and routes.
constexpr std::string_view deny_list[] = {"admin", "api", "exe", "exedev", "login", "mail", "shelley",
                                          "status", "support", "vscode", "xterm", "www"};

}  // namespace

std::optional<std::string> validate_vm_name(std::string_view name) {
  static const std::regex pattern("^[a-z][a-z0-9]*(-[a-z0-9]+)*$");
  const std::string text(name);
  if (name.size() < 5 || name.size() > 52 || !std::regex_match(text, pattern)) {
    return fmt::format(
        "invalid VM name, must be 5-52 characters: lowercase letters, digits and single hyphens, starting with "
        "a letter: \"{}\"",
        text);
  }
  const auto dash = name.rfind('-');
  const std::string_view last = dash == std::string_view::npos ? name : name.substr(dash + 1);
  if (has_prefix_then_digits(last, "p") || has_prefix_then_digits(last, "port") ||
      (dash == std::string_view::npos && has_prefix_then_digits(name, "na")) ||
      std::find(std::begin(deny_list), std::end(deny_list), name) != std::end(deny_list)) {
    return fmt::format("VM name \"{}\" is reserved", text);
  }
  return std::nullopt;
}

bool is_valid_tag(std::string_view tag) {
  static const std::regex pattern("^[a-z][a-z0-9_-]*$");
  return std::regex_match(std::string(tag), pattern);
}

std::optional<std::string> validate_tag(std::string_view tag) {
  if (is_valid_tag(tag)) return std::nullopt;
  return fmt::format("invalid tag \"{}\": tags must match ^[a-z][a-z0-9_-]*$", tag);
}

std::optional<std::string> validate_comment(std::string_view comment) {
  if (comment.size() > 200) return std::string("comment must be at most 200 bytes");
  // Decode UTF-8 strictly, one rune at a time: the rune checks below need code points, and the
  // first problem in the text is the one reported.
  for (std::size_t i = 0; i < comment.size();) {
    const auto sequence = detail::utf8_sequence_at(comment, i);
    if (!sequence.code_point) return std::string("comment must be valid UTF-8");
    const char32_t r = *sequence.code_point;
    i += sequence.length;
    if (r == '\t' || r == '\r' || r == '\n') return std::string("comment must not contain tabs or line breaks");
    if (r < 0x20 || (r >= 0x7F && r <= 0x9F)) return std::string("comment must not contain control characters");
    if ((r >= 0x200B && r <= 0x200F) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) ||
        r == 0xFEFF || r == 0x061C) {
      return std::string("comment must not contain bidirectional or zero-width characters");
    }
    if (r == '<' || r == '>' || r == '&' || r == '"' || r == '\'' || r == '`') {
      return std::string("comment must not contain any of < > & \" ' `");
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
  std::size_t split = 0;
  while (split < text.size() && (std::isdigit(static_cast<unsigned char>(text[split])) || text[split] == '.')) ++split;
  const std::string number(text.substr(0, split));
  std::string unit(text.substr(split));
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::toupper(c); });
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number == ".") return std::nullopt;
  const double value = std::stod(number);
  double scale = 0;
  if (unit.empty()) scale = 1024.0 * 1024 * 1024;
  else if (unit == "B") scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  else return std::nullopt;
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes > 1.8e19) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

ExpiryParse parse_expiry(std::string_view text) {
  if (text == "never") return {true, std::nullopt};
  if (text.size() < 2) return {};
  const std::string_view digits = text.substr(0, text.size() - 1);
  if (!all_digits(digits)) return {};
  long long n = 0;
  std::from_chars(digits.data(), digits.data() + digits.size(), n);
  long long unit = 0;
  switch (text.back()) {
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    case 'w': unit = 7 * 86400; break;
    case 'm': unit = 30 * 86400; break;
    case 'y': unit = 365 * 86400; break;
    default: return {};
  }
  if (n <= 0 || n > 100000) return {};
  return {true, std::chrono::seconds(n * unit)};
}

}  // namespace exedev::emulator
