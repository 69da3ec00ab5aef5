#pragma once
// The content hash every file tool reports and checks expected_hash against.

#include "common/sha256.hpp"

#include <string>
#include <string_view>

namespace exedev::tools::detail {

using exedev::detail::sha256_hex;  // common/sha256.hpp: 64 lowercase hex digits

/// The first 12 hex digits of the SHA-256 of `bytes` (the file's raw bytes).
[[nodiscard]] std::string content_hash(std::string_view bytes);

}  // namespace exedev::tools::detail
