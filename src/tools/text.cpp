#include "tools/text.hpp"

#include "common/utf8.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <utility>

namespace exedev::tools::detail {

using exedev::detail::is_utf8_continuation;

namespace {

// ---- repr() ----

// Code points str.isprintable() rejects, besides the ASCII controls: the C1 controls, the
// format characters (Cf), the separators other than the ASCII space (Zs, Zl, Zp) and private use.
bool printable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x061C || c == 0x180E || c == 0x1680 || (c >= 0x2000 && c <= 0x200F)) return false;
  if ((c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x2064) || (c >= 0x2066 && c <= 0x206F)) return false;
  if (c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB)) return false;
  if ((c >= 0xE000 && c <= 0xF8FF) || c >= 0xF0000) return false;
  return true;
}

void append_escape(std::string& out, char32_t c) {
  char buffer[16];
  if (c <= 0xFF) {
    std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned>(c));
  } else if (c <= 0xFFFF) {
    std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
  } else {
    std::snprintf(buffer, sizeof buffer, "\\U%08x", static_cast<unsigned>(c));
  }
  out += buffer;
}

}  // namespace

std::size_t utf8_length(std::string_view text) {
  std::size_t count = 0;
  for (const char c : text) count += !is_utf8_continuation(static_cast<unsigned char>(c));
  return count;
}

std::string utf8_tail(std::string_view text, std::size_t count) {
  if (count == 0) return {};
  std::size_t seen = 0;
  for (std::size_t i = text.size(); i-- > 0;) {
    if (!is_utf8_continuation(static_cast<unsigned char>(text[i])) && ++seen == count) return std::string(text.substr(i));
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
  for (std::size_t i = 0; i < text.size();) {
    const auto sequence = exedev::detail::utf8_sequence_at(text, i);
    if (!sequence.code_point) {
      // Python sees an undecodable byte as the surrogate U+DC80..U+DCFF.
      append_escape(out, 0xDC00 + static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    const char32_t c = *sequence.code_point;
    const std::size_t length = sequence.length;
    if (c == static_cast<char32_t>(quote) || c == U'\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == U'\t') {
      out += "\\t";
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (!printable(c)) {
      append_escape(out, c);
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  out += quote;
  return out;
}

std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, in scientific form: [-]d[.ddd]e[+-]XX.
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific).ptr;
  const std::string scientific(buffer, end);
  const auto e = scientific.find('e');
  std::string mantissa = scientific.substr(0, e);
  const int exponent = std::atoi(scientific.c_str() + e + 1);
  std::string sign;
  if (!mantissa.empty() && mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (const char c : mantissa) {
    if (c != '.') digits += c;
  }
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  std::string integral;
  std::string fraction;
  if (exponent < 0) {
    integral = "0";
    fraction = std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const auto point = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= point) {
      integral = digits + std::string(point - digits.size(), '0');
    } else {
      integral = digits.substr(0, point);
      fraction = digits.substr(point);
    }
  }
  if (fraction.empty()) fraction = "0";
  return sign + integral + "." + fraction;
}

std::string python_g(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  return buffer;
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
  for (std::size_t i = 0; i < bytes.size();) {
    const auto sequence = exedev::detail::utf8_sequence_at(bytes, i);
    if (sequence.code_point) {
      i += sequence.length;
      continue;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(bytes[i]));
    const std::string at = "byte " + std::string(hex) + " in position " + std::to_string(i);
    const std::string what = "'utf-8' codec can't decode ";
    switch (sequence.fault) {
      case exedev::detail::Utf8Fault::invalid_start: return what + at + ": invalid start byte";
      case exedev::detail::Utf8Fault::truncated:
        if (sequence.length == 1) return what + at + ": unexpected end of data";
        return what + "bytes in position " + std::to_string(i) + "-" + std::to_string(i + sequence.length - 1) +
               ": unexpected end of data";
      default: return what + at + ": invalid continuation byte";
    }
  }
  return std::nullopt;
}

}  // namespace exedev::tools::detail
