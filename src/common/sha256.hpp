#pragma once
// SHA-256: in hex for the workspace's transfer checks and the file tools' content hashes, and as
// OpenSSH's key fingerprint. Internal, sans-IO; the one file of exedev_common that uses OpenSSL
// (libcrypto).

#include <memory>
#include <string>
#include <string_view>

namespace exedev::detail {

/// The SHA-256 digest of `data`, 64 lowercase hex digits (as `sha256sum` prints it).
[[nodiscard]] std::string sha256_hex(std::string_view data);

/// OpenSSH's fingerprint of a public key blob: "SHA256:" and the digest in base64 without padding
/// (as `ssh-keygen -lf` prints it). The SSH layer's keys and host keys, and the emulator's.
[[nodiscard]] std::string ssh_key_fingerprint(std::string_view key_blob);

/// SHA-256 of data that arrives in pieces: what sha256_hex gives for the pieces joined.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void update(std::string_view piece);
  /// The digest in hex; the hash starts again empty afterwards.
  [[nodiscard]] std::string finish_hex();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

}  // namespace exedev::detail
