#pragma once
// Standard base64 (RFC 4648, with padding), sans-IO.

#include <optional>
#include <string>
#include <string_view>

namespace exedev::detail {

[[nodiscard]] std::string base64_encode(std::string_view bytes);
/// Decodes one or more complete quartets; nullopt on any other character or a bad length.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);

}  // namespace exedev::detail
