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
  std::string out;
  out.reserve(text.size() / 4 * 3);
  Base64Decoder decoder;
  if (!decoder.feed(text, out) || !decoder.finish(out)) return std::nullopt;
  return out;
}

std::string base64url_encode(std::string_view bytes) {
  std::string out = base64_encode(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    else if (c == '/') c = '_';
  }
  return out;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  std::string standard;
  standard.reserve(text.size() + 2);
  for (const char c : text) {
    if (c == '\n' || c == '\r') continue;
    if (c == '=' || c == '+' || c == '/') return std::nullopt;
    standard += c == '-' ? '+' : c == '_' ? '/' : c;
  }
  standard.append((4 - standard.size() % 4) % 4, '=');
  return base64_decode(standard);
}

bool Base64Decoder::feed(std::string_view text, std::string& out) {
  // One pass over the text (pages are megabytes).
  for (const char c : text) {
    if (failed_) break;
    if (c == '\n' || c == '\r') continue;
    if (c == '=') {
      ++padding_;
      continue;
    }
    const auto value = digit_values[static_cast<unsigned char>(c)];
    if (value < 0 || padding_ > 0) {
      failed_ = true;
      break;
    }
    quartet_ = quartet_ << 6 | static_cast<std::uint32_t>(value);
    if (++digits_ == 4) {
      out += static_cast<char>(quartet_ >> 16 & 0xFF);
      out += static_cast<char>(quartet_ >> 8 & 0xFF);
      out += static_cast<char>(quartet_ & 0xFF);
      quartet_ = 0;
      digits_ = 0;
    }
  }
  return !failed_;
}

bool Base64Decoder::finish(std::string& out) {
  // What is left is the last quartet's digits, completed by its padding.
  if (failed_ || digits_ + padding_ != (digits_ == 0 ? 0 : 4) || padding_ > 2) {
    failed_ = true;
    return false;
  }
  if (digits_ == 3) {
    out += static_cast<char>(quartet_ >> 10 & 0xFF);
    out += static_cast<char>(quartet_ >> 2 & 0xFF);
  } else if (digits_ == 2) {
    out += static_cast<char>(quartet_ >> 4 & 0xFF);
  }
  quartet_ = 0;
  digits_ = 0;
  padding_ = 0;
  return true;
}

}  // namespace exedev::detail
