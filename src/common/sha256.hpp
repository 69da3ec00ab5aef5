#pragma once
// SHA-256 in hex: the workspace's transfer checks and the file tools' content hashes. Internal,
// sans-IO; the one file of exedev_common that uses OpenSSL (libcrypto).

#include <string>
#include <string_view>

namespace exedev::detail {

/// The SHA-256 digest of `data`, 64 lowercase hex digits (as `sha256sum` prints it).
[[nodiscard]] std::string sha256_hex(std::string_view data);

}  // namespace exedev::detail
