#pragma once
// What a private key's text is, read without decrypting it, so that a key that cannot be used
// gets a clear error before the server is asked (libssh2 reports every such case as one code).
// Sans-IO; never copies key material into a message. Internal.

#include <string>
#include <string_view>

namespace exedev::ssh {

struct PrivateKeyInfo {
  enum class Format { openssh, pem, pkcs8, unknown };
  Format format = Format::unknown;
  bool encrypted = false;
  /// The key type when the text says it without decryption ("ssh-ed25519", "ssh-rsa", "ecdsa…"
  /// for OpenSSH keys; "RSA", "EC", "DSA" for PEM); empty for PKCS#8.
  std::string key_type;
  /// Why the text is not a usable key (a format or type this library cannot use), or empty.
  std::string problem;
  /// The public key's wire blob when the text carries it in the clear (OpenSSH keys, encrypted
  /// or not); empty otherwise (PEM and PKCS#8: read the `.pub` file beside it).
  std::string public_blob;
};

[[nodiscard]] PrivateKeyInfo inspect_private_key(std::string_view text);

}  // namespace exedev::ssh
