#pragma once
// Standard base64 (RFC 4648 alphabet, with padding), and base64url without padding (exe0
// tokens). Internal, sans-IO.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace exedev::detail {

[[nodiscard]] std::string base64_encode(std::string_view bytes);

/// Strict decoding of complete quartets. Line breaks (`\n`, `\r`) are skipped, as the `base64`
/// tool wraps its output in lines; `=` may only end the last quartet; anything else outside the
/// alphabet, or a missing or surplus digit, gives nullopt.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

/// base64url (RFC 4648 §5: `-` and `_` for `+` and `/`) without padding, as Go's
/// base64.RawURLEncoding writes it.
[[nodiscard]] std::string base64url_encode(std::string_view bytes);

/// Decodes unpadded base64url as Go's base64.RawURLEncoding does: `\n` and `\r` are skipped;
/// `=`, `+`, `/` or any other character outside the alphabet, or a length that leaves one lone
/// digit, gives nullopt.
[[nodiscard]] std::optional<std::string> base64url_decode(std::string_view text);

/// base64_decode over text that arrives in pieces, split anywhere: each feed appends the bytes
/// of the quartets it completes to `out`, finish() the last quartet's. The same text decodes to
/// the same bytes, and is refused in the same cases, however it is split.
class Base64Decoder {
 public:
  /// false once the text is known not to be base64 (the decoder then refuses everything).
  [[nodiscard]] bool feed(std::string_view text, std::string& out);
  /// false when the text so far does not end a base64 text (a partial quartet, bad padding).
  [[nodiscard]] bool finish(std::string& out);

 private:
  std::uint32_t quartet_ = 0;
  std::size_t digits_ = 0;   // in the current quartet
  std::size_t padding_ = 0;  // `=` seen
  bool failed_ = false;
};

}  // namespace exedev::detail
