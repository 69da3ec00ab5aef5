#pragma once
// The content hash every file tool reports and checks expected_hash against.

#include <string>
#include <string_view>

namespace exedev::tools::detail {

/// The SHA-256 of `bytes` in lowercase hex (64 digits).
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

/// The first 12 hex digits of the SHA-256 of `bytes` (the file's raw bytes).
[[nodiscard]] std::string content_hash(std::string_view bytes);

}  // namespace exedev::tools::detail
