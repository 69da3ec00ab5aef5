#include "common/utf8.hpp"

namespace exedev::detail {

Utf8Sequence utf8_sequence_at(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  if (lead < 0x80) return {1, lead, Utf8Fault::none};
  std::size_t continuations = 0;
  char32_t code_point = 0;
  // The range of the second byte: narrower after E0, ED, F0 and F4, which excludes overlong
  // forms, surrogates and code points above U+10FFFF.
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuations = 1;
    code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    continuations = 2;
    code_point = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    continuations = 3;
    code_point = lead & 0x07;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return {1, std::nullopt, Utf8Fault::invalid_start};
  }
  for (std::size_t k = 1; k <= continuations; ++k) {
    if (at + k >= text.size()) return {k, std::nullopt, Utf8Fault::truncated};
    const auto byte = static_cast<unsigned char>(text[at + k]);
    if (byte < low || byte > high) return {k, std::nullopt, Utf8Fault::invalid_continuation};
    code_point = code_point << 6 | (byte & 0x3F);
    low = 0x80;
    high = 0xBF;
  }
  return {continuations + 1, code_point, Utf8Fault::none};
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto sequence = utf8_sequence_at(text, i);
    if (!sequence.code_point) return false;
    i += sequence.length;
  }
  return true;
}

std::string utf8_replace_invalid(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto sequence = utf8_sequence_at(text, i);
    if (sequence.code_point) out.append(text.substr(i, sequence.length));
    else out += "\xEF\xBF\xBD";
    i += sequence.length;
  }
  return out;
}

std::optional<std::vector<char32_t>> utf8_code_points(std::string_view text) {
  std::vector<char32_t> points;
  for (std::size_t i = 0; i < text.size();) {
    const auto sequence = utf8_sequence_at(text, i);
    if (!sequence.code_point) return std::nullopt;
    points.push_back(*sequence.code_point);
    i += sequence.length;
  }
  return points;
}

void append_utf8(std::string& out, char32_t code_point) {
  const auto unit = [&](char32_t bits) { out += static_cast<char>(bits); };
  if (code_point < 0x80) {
    unit(code_point);
  } else if (code_point < 0x800) {
    unit(0xC0 | code_point >> 6);
    unit(0x80 | (code_point & 0x3F));
  } else if (code_point < 0x10000) {
    unit(0xE0 | code_point >> 12);
    unit(0x80 | (code_point >> 6 & 0x3F));
    unit(0x80 | (code_point & 0x3F));
  } else {
    unit(0xF0 | code_point >> 18);
    unit(0x80 | (code_point >> 12 & 0x3F));
    unit(0x80 | (code_point >> 6 & 0x3F));
    unit(0x80 | (code_point & 0x3F));
  }
}

}  // namespace exedev::detail
