#include "emulator/lexer.hpp"

#include "common/utf8.hpp"

#include <cstdint>

namespace exedev::emulator {
namespace {

constexpr char32_t replacement_rune = 0xFFFD;

// Decodes one rune like Go's utf8.DecodeRune: an invalid or truncated sequence yields U+FFFD
// and consumes one byte.
char32_t decode_rune(std::string_view s, std::size_t& pos) {
  const auto sequence = detail::utf8_sequence_at(s, pos);
  pos += sequence.code_point ? sequence.length : 1;
  return sequence.code_point.value_or(replacement_rune);
}

// go-shlex's DefaultTokenizer classes. IsWord (letters, digits, '_') is not needed: with
// whitespace splitting on, word and "other" runes take the same path.
bool is_quote(char32_t r) { return r == '\'' || r == '"'; }
bool is_escape(char32_t r) { return r == '\\'; }
bool is_escaped_quote(char32_t r) { return r == '"'; }

// The lexer states of go-shlex: ' ' (between words), 'a' (in a word), a quote rune, or '\\'.
constexpr char32_t st_space = ' ';
constexpr char32_t st_word = 'a';

}  // namespace

bool is_go_space(char32_t r) {
  switch (r) {
    case '\t': case '\n': case '\v': case '\f': case '\r': case ' ':
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029:
    case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return r >= 0x2000 && r <= 0x200A;
  }
}

std::string_view trim_space(std::string_view text) {
  // Scan runes from the front, then from the back over whole runes.
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t next = begin;
    if (!is_go_space(decode_rune(text, next))) break;
    begin = next;
  }
  std::size_t end = text.size();
  while (end > begin) {
    // Find the start of the last rune: at most 4 bytes back, first non-continuation byte.
    std::size_t start = end - 1;
    while (start > begin && end - start < 4 && detail::is_utf8_continuation(static_cast<unsigned char>(text[start]))) --start;
    std::size_t probe = start;
    const char32_t r = decode_rune(text, probe);
    if (probe != end) {  // not one whole rune: an invalid trailing byte, which is not space
      break;
    }
    if (!is_go_space(r)) break;
    end = start;
  }
  return text.substr(begin, end - begin);
}

LexResult lex(std::string_view line) {
  LexResult result;
  std::size_t pos = 0;
  // One iteration per go-shlex readToken call.
  while (true) {
    std::string token;
    bool quoted = false;
    char32_t state = st_space;
    char32_t escaped_state = st_space;
    bool at_eof = false;
    while (true) {
      if (pos >= line.size()) {
        if (is_quote(state)) result.error = "No closing quotation";
        else if (is_escape(state)) result.error = "No escaped character";
        at_eof = true;
        break;
      }
      const char32_t next = decode_rune(line, pos);
      if (state == st_space) {
        if (is_go_space(next)) break;
        if (is_escape(next)) {
          escaped_state = st_word;
          state = next;
        } else if (is_quote(next)) {
          state = next;
        } else {
          token.clear();
          detail::append_utf8(token, next);
          state = st_word;
        }
      } else if (is_quote(state)) {
        quoted = true;
        if (next == state) {
          state = st_word;
        } else if (is_escape(next) && is_escaped_quote(state)) {
          escaped_state = state;
          state = next;
        } else {
          detail::append_utf8(token, next);
        }
      } else if (is_escape(state)) {
        // Inside double quotes only \" and \\ are escapes; anything else keeps the backslash.
        if (is_quote(escaped_state) && next != state && next != escaped_state) detail::append_utf8(token, state);
        detail::append_utf8(token, next);
        state = escaped_state;
      } else {  // st_word
        if (is_go_space(next)) {
          if (!token.empty() || quoted) break;
        } else if (is_quote(next)) {
          state = next;
        } else if (is_escape(next)) {
          escaped_state = st_word;
          state = next;
        } else {
          detail::append_utf8(token, next);
        }
      }
    }
    if (!token.empty()) result.words.push_back(std::move(token));
    if (result.error) {
      result.words.clear();
      return result;
    }
    if (at_eof) return result;
  }
}

}  // namespace exedev::emulator
