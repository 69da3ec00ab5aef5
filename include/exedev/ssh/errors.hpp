#pragma once
// Errors of the SSH transport (a direct SSH connection to a VM). Connection failures (resolve,
// connect, handshake, a dropped connection) are the client's ConnectionError, with the failure
// underneath as cause(): an Asio/system code, std::errc::timed_out for a phase's timeout, or a
// libssh2 code in the category named "libssh2". Messages name hosts, users, key files and
// fingerprints, never key material.

#include <exedev/errors.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace exedev {

/// The server's host key was refused: it differs from the one recorded in known_hosts, it is not
/// recorded and the policy is strict, it is marked @revoked, the policy callback said no, or the
/// known_hosts file could not be read. Nothing was sent; not worth retrying as is.
class HostKeyError : public Error {
 public:
  HostKeyError(const std::string& message, std::string host, std::string offered_fingerprint,
               std::optional<std::string> recorded_fingerprint)
      : Error(errc::host_key_rejected, message),
        host_(std::move(host)),
        offered_fingerprint_(std::move(offered_fingerprint)),
        recorded_fingerprint_(std::move(recorded_fingerprint)) {}
  /// "host" for port 22, else "[host]:port" (the known_hosts spelling).
  [[nodiscard]] const std::string& host() const noexcept { return host_; }
  /// The server's key, "SHA256:<base64>" as ssh-keygen -l prints it.
  [[nodiscard]] const std::string& offered_fingerprint() const noexcept { return offered_fingerprint_; }
  /// The recorded key of the same type, when one is recorded for the host.
  [[nodiscard]] const std::optional<std::string>& recorded_fingerprint() const noexcept { return recorded_fingerprint_; }

 private:
  std::string host_;
  std::string offered_fingerprint_;
  std::optional<std::string> recorded_fingerprint_;
};

/// The SSH server accepted none of the keys tried, or closed the connection while they were
/// offered (exe.dev's SSH front does so for a VM that is not running; the connection's error is
/// nested). `tried()` names each attempt ("agent key SHA256:…", a key file's path, "explicit
/// key"), never a key's content; empty when the server closed the connection.
class SshAuthenticationError : public Error {
 public:
  SshAuthenticationError(const std::string& message, std::vector<std::string> tried)
      : SshAuthenticationError(errc::ssh_authentication_failed, message, std::move(tried)) {}
  [[nodiscard]] const std::vector<std::string>& tried() const noexcept { return tried_; }

 protected:
  SshAuthenticationError(errc code, const std::string& message, std::vector<std::string> tried)
      : Error(code, message), tried_(std::move(tried)) {}

 private:
  std::vector<std::string> tried_;
};

/// A private key given explicitly cannot be used: its file is unreadable, it is encrypted and no
/// passphrase (or a wrong one) was given, or its format or type is unknown. `source()` is the
/// file's path, or "private_key_pem" for a key given in memory.
class SshKeyUnusableError : public SshAuthenticationError {
 public:
  SshKeyUnusableError(const std::string& message, std::string source)
      : SshAuthenticationError(errc::ssh_key_unusable, message, {}), source_(std::move(source)) {}
  [[nodiscard]] const std::string& source() const noexcept { return source_; }

 private:
  std::string source_;
};

/// An SSH connection authenticated but landed somewhere other than the VM it names: exe.dev's
/// front lets the key decide, so an unregistered key lands in its registration shell and another
/// account's key on that account's VM. Found by the route probe before any of the caller's work
/// ran on the connection (docs/ssh.md, "Landing on the VM it names"). `key_fingerprint()` is the
/// key that authenticated; `landing()` what the probe saw ("the lobby's registration shell",
/// "another VM", "a VM without the mark", "an unrecognised answer").
class SshMisrouteError : public SshAuthenticationError {
 public:
  SshMisrouteError(const std::string& message, std::string key_fingerprint, std::string landing)
      : SshAuthenticationError(errc::ssh_misrouted, message, {}),
        key_fingerprint_(std::move(key_fingerprint)),
        landing_(std::move(landing)) {}
  [[nodiscard]] const std::string& key_fingerprint() const noexcept { return key_fingerprint_; }
  [[nodiscard]] const std::string& landing() const noexcept { return landing_; }

 private:
  std::string key_fingerprint_;
  std::string landing_;
};

}  // namespace exedev
