#include "common/shell_quote.hpp"

namespace exedev::detail {

std::string sh_single_quote(std::string_view word) {
  std::string out;
  out.reserve(word.size() + 2);
  out += '\'';
  for (const char c : word) {
    if (c == '\'') out += "'\"'\"'";
    else out += c;
  }
  out += '\'';
  return out;
}

std::string sh_quote_if_needed(std::string_view word) {
  const auto safe = [](unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           std::string_view("@%+=:,./-").find(static_cast<char>(c)) != std::string_view::npos;
  };
  for (const unsigned char c : word) {
    if (!safe(c)) return sh_single_quote(word);
  }
  return word.empty() ? sh_single_quote(word) : std::string(word);
}

}  // namespace exedev::detail
