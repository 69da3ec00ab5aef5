#pragma once
// Standard base64 (RFC 4648 alphabet, with padding). Internal, sans-IO.

#include <optional>
#include <string>
#include <string_view>

namespace exedev::detail {

[[nodiscard]] std::string base64_encode(std::string_view bytes);

/// Strict decoding of complete quartets. Line breaks (`\n`, `\r`) are skipped, as the `base64`
/// tool wraps its output in lines; `=` may only end the last quartet; anything else outside the
/// alphabet, or a missing or surplus digit, gives nullopt.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace exedev::detail
