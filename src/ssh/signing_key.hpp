#pragma once
// A private key held in memory that makes SSH signatures (RFC 8709 ed25519, RFC 5656 ECDSA
// P-256/384/521, RFC 8332 rsa-sha2-512) with OpenSSL 3: read from the OpenSSH format (plain, or
// encrypted with bcrypt_pbkdf and AES-CTR/CBC) or from PEM/PKCS#8 (through OpenSSL). Internal.
// Messages name the key's source, never its content or passphrase.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace exedev::ssh {

class SigningKey {
 public:
  /// Reads the key `text` (a file's content) with `passphrase` for an encrypted one. `source`
  /// names it in errors (a path, "private_key_pem"). Throws SshKeyUnusableError for a key that
  /// cannot be read: an unknown format, cipher or key type, encrypted without a passphrase, a
  /// wrong passphrase, or a damaged file.
  static SigningKey load(std::string_view text, const std::optional<std::string>& passphrase, const std::string& source);

  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;
  ~SigningKey();

  /// The public key in the SSH wire format (what authorized_keys holds in base64).
  [[nodiscard]] const std::string& public_key_blob() const noexcept { return public_key_blob_; }
  /// The SSH signature blob over `data`: string(algorithm) ‖ string(signature), the algorithm
  /// "ssh-ed25519", "ecdsa-sha2-nistp256|384|521" or "rsa-sha2-512". Throws SshKeyUnusableError
  /// if OpenSSL fails.
  [[nodiscard]] std::string sign(std::string_view data) const;

 private:
  struct Impl;
  SigningKey(std::unique_ptr<Impl> impl, std::string public_key_blob);
  std::unique_ptr<Impl> impl_;
  std::string public_key_blob_;
};

}  // namespace exedev::ssh
