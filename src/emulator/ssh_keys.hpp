#pragma once
// SSH public keys as the lobby's `ssh-key` commands take them: one authorized_keys line parsed,
// its SHA256 fingerprint, and exe.dev's rules for a key's name. Internal, sans-IO.

#include <optional>
#include <string>
#include <string_view>

namespace exedev::emulator {

struct PublicKey {
  std::string type;     ///< e.g. ssh-ed25519
  std::string blob;     ///< the key's wire encoding (the base64 field, decoded)
  std::string comment;  ///< as written, possibly empty

  /// `<type> <base64>`, the form exe.dev stores and prints (no comment).
  [[nodiscard]] std::string canonical() const;
  /// `SHA256:` and the unpadded base64 of the blob's SHA-256, as ssh-keygen -l prints it.
  [[nodiscard]] std::string fingerprint() const;
};

/// One line of authorized_keys form (`[options] type base64 [comment]`), as Go's
/// ssh.ParseAuthorizedKey reads it. nullopt when it holds no key whose type field matches its
/// blob (exe.dev then answers `invalid SSH public key: ssh: no key found`).
[[nodiscard]] std::optional<PublicKey> parse_public_key(std::string_view line);

/// exe.dev's name for a key from its comment (sshkey.SanitizeComment): shell metacharacters,
/// path separators and control characters removed, runs of spaces joined by one `-`, leading
/// dashes removed, at most 64 bytes.
[[nodiscard]] std::string sanitize_key_name(std::string_view comment);

}  // namespace exedev::emulator
