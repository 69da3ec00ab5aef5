#include "common/base64.hpp"

#include <array>
#include <cstdint>

namespace exedev::detail {

namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr auto digit_values = [] {
  std::array<std::int8_t, 256> values{};
  values.fill(-1);
  for (int i = 0; i < 64; ++i) values[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
  return values;
}();

std::uint32_t byte_at(std::string_view bytes, std::size_t i) { return static_cast<unsigned char>(bytes[i]); }

}  // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto v = byte_at(bytes, i) << 16 | byte_at(bytes, i + 1) << 8 | byte_at(bytes, i + 2);
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += alphabet[v >> 6 & 63];
    out += alphabet[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    std::uint32_t v = byte_at(bytes, i) << 16;
    if (rest == 2) v |= byte_at(bytes, i + 1) << 8;
    out += alphabet[v >> 18 & 63];
    out += alphabet[v >> 12 & 63];
    out += rest == 2 ? alphabet[v >> 6 & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  // One pass over the text (pages are megabytes).
  std::string out;
  out.reserve(text.size() / 4 * 3);
  std::uint32_t quartet = 0;
  std::size_t digits = 0;   // in the current quartet
  std::size_t padding = 0;  // `=` seen
  for (const char c : text) {
    if (c == '\n' || c == '\r') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const auto value = digit_values[static_cast<unsigned char>(c)];
    if (value < 0 || padding > 0) return std::nullopt;
    quartet = quartet << 6 | static_cast<std::uint32_t>(value);
    if (++digits == 4) {
      out += static_cast<char>(quartet >> 16 & 0xFF);
      out += static_cast<char>(quartet >> 8 & 0xFF);
      out += static_cast<char>(quartet & 0xFF);
      quartet = 0;
      digits = 0;
    }
  }
  // What is left is the last quartet's digits, completed by its padding.
  if (digits + padding != (digits == 0 ? 0 : 4) || padding > 2) return std::nullopt;
  if (digits == 3) {
    out += static_cast<char>(quartet >> 10 & 0xFF);
    out += static_cast<char>(quartet >> 2 & 0xFF);
  } else if (digits == 2) {
    out += static_cast<char>(quartet >> 4 & 0xFF);
  }
  return out;
}

}  // namespace exedev::detail
