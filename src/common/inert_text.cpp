#include "common/inert_text.hpp"

#include "common/utf8.hpp"

namespace exedev::detail {

namespace {

void append_escaped(std::string& out, unsigned char byte) {
  constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

}  // namespace

std::string inert_text(std::string_view bytes, std::size_t max_bytes) {
  std::string out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    const auto sequence = utf8_sequence_at(bytes, at);
    if (at + sequence.length > max_bytes) break;
    const auto byte = static_cast<unsigned char>(bytes[at]);
    if (!sequence.code_point) {
      for (std::size_t i = 0; i < sequence.length; ++i) append_escaped(out, static_cast<unsigned char>(bytes[at + i]));
    } else if (const char32_t c = *sequence.code_point; c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F)) {
      for (std::size_t i = 0; i < sequence.length; ++i) append_escaped(out, static_cast<unsigned char>(bytes[at + i]));
    } else if (byte == '\\') {
      out += "\\\\";
    } else {
      out.append(bytes.substr(at, sequence.length));
    }
    at += sequence.length;
  }
  if (at < bytes.size()) out += " ... (" + std::to_string(bytes.size() - at) + " more bytes)";
  return out;
}

}  // namespace exedev::detail
