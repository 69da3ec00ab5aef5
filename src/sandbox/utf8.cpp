#include "sandbox/utf8.hpp"

namespace exedev::detail {
namespace {

// Length of the valid sequence starting at `i` and its code point, or the length of the maximal
// invalid subpart (code point nullopt). Follows the Unicode "maximal subpart" rule.
struct Step {
  std::size_t length;
  std::optional<char32_t> code_point;
};

Step next(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return {1, b0};
  std::size_t need = 0;
  char32_t cp = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {1, std::nullopt};
  }
  std::size_t k = 1;
  for (; k <= need; ++k) {
    if (i + k >= s.size()) return {k, std::nullopt};
    const unsigned char b = byte(i + k);
    const unsigned char min = k == 1 ? lo : 0x80;
    const unsigned char max = k == 1 ? hi : 0xBF;
    if (b < min || b > max) return {k, std::nullopt};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {need + 1, cp};
}

}  // namespace

std::optional<std::vector<char32_t>> utf8_code_points(std::string_view text) {
  std::vector<char32_t> points;
  for (std::size_t i = 0; i < text.size();) {
    const Step step = next(text, i);
    if (!step.code_point) return std::nullopt;
    points.push_back(*step.code_point);
    i += step.length;
  }
  return points;
}

}  // namespace exedev::detail
