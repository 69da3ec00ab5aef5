#pragma once
// bcrypt_pbkdf (OpenBSD), the key derivation of encrypted OpenSSH private keys ("bcrypt" kdf):
// SHA-512 and Blowfish's expensive key schedule, written from the OpenBSD definition because
// OpenSSL has neither eksblowfish nor bcrypt_pbkdf. Internal, sans-IO.

#include <optional>
#include <string>
#include <string_view>

namespace exedev::ssh {

/// `key_length` bytes derived from `passphrase` and `salt` in `rounds` rounds; nullopt for what
/// OpenBSD refuses (an empty passphrase or salt, no rounds, no key or more than 1024 bytes).
[[nodiscard]] std::optional<std::string> bcrypt_pbkdf(std::string_view passphrase, std::string_view salt,
                                                      std::size_t key_length, unsigned rounds);

}  // namespace exedev::ssh
