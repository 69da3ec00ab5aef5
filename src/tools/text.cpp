#include "tools/text.hpp"

#include <cstdio>

namespace exedev::tools::detail {

namespace {

bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

}  // namespace

std::size_t utf8_length(std::string_view text) {
  std::size_t count = 0;
  for (const char c : text) count += !is_continuation(static_cast<unsigned char>(c));
  return count;
}

std::string utf8_tail(std::string_view text, std::size_t count) {
  if (count == 0) return {};
  std::size_t seen = 0;
  for (std::size_t i = text.size(); i-- > 0;) {
    if (!is_continuation(static_cast<unsigned char>(text[i])) && ++seen == count) return std::string(text.substr(i));
  }
  return std::string(text);
}

std::vector<std::string> split_lines(std::string_view text, bool keep_ends) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t break_length = 0;
    if (c == '\r') {
      break_length = (i + 1 < text.size() && text[i + 1] == '\n') ? 2 : 1;
    } else if (c == '\n' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) {
      break_length = 1;
    } else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85) {
      break_length = 2;
    } else if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
               (static_cast<unsigned char>(text[i + 2]) == 0xA8 || static_cast<unsigned char>(text[i + 2]) == 0xA9)) {
      break_length = 3;
    }
    if (break_length == 0) {
      ++i;
      continue;
    }
    const std::size_t end = keep_ends ? i + break_length : i;
    lines.emplace_back(text.substr(start, end - start));
    i += break_length;
    start = i;
  }
  if (start < text.size()) lines.emplace_back(text.substr(start));
  return lines;
}

std::size_t count_occurrences(std::string_view text, std::string_view part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string_view::npos; at = text.find(part, at + part.size())) ++count;
  return count;
}

std::string python_repr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '\\') out += "\\\\";
    else if (ch == quote) {
      out += '\\';
      out += quote;
    }
    else if (ch == '\n') out += "\\n";
    else if (ch == '\r') out += "\\r";
    else if (ch == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += ch;
    }
  }
  out += quote;
  return out;
}

std::string with_thousands(std::size_t value) {
  const std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::optional<std::string> utf8_decode_error(std::string_view bytes) {
  const auto byte_at = [&](std::size_t i) { return static_cast<unsigned char>(bytes[i]); };
  const auto error = [](std::string what) { return "'utf-8' codec can't decode " + what; };
  std::size_t i = 0;
  while (i < bytes.size()) {
    const unsigned char lead = byte_at(i);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) length = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", lead);
    if (length == 0) return error("byte " + std::string(hex) + " in position " + std::to_string(i) + ": invalid start byte");
    std::size_t valid = 1;
    for (; valid < length && i + valid < bytes.size(); ++valid) {
      const unsigned char next = byte_at(i + valid);
      const unsigned char min = valid == 1 ? low : 0x80;
      const unsigned char max = valid == 1 ? high : 0xBF;
      if (next < min || next > max) {
        return error("byte " + std::string(hex) + " in position " + std::to_string(i) + ": invalid continuation byte");
      }
    }
    if (valid < length) {  // the data ends inside the sequence
      if (valid == 1) return error("byte " + std::string(hex) + " in position " + std::to_string(i) + ": unexpected end of data");
      return error("bytes in position " + std::to_string(i) + "-" + std::to_string(i + valid - 1) + ": unexpected end of data");
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace exedev::tools::detail
