#pragma once
// The key that signs SSHSIG messages (exe0 tokens), chosen from an SshKeySource as the SSH
// transport chooses a connection's keys (key_sources.hpp, key_choice): the explicit key, else the
// first ssh_config IdentityFile key for the host that exists and is not encrypted, else the
// agent's first key of a usable type (unless IdentitiesOnly), else the first default key file
// that exists and is not encrypted. Internal.

#include <exedev/ssh/key_source.hpp>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace exedev::ssh {

class Signer {
 public:
  /// Chooses the key `source` offers to `host` (whose ssh_config section applies; for exe0
  /// tokens the host the key is registered through, exe.dev). Throws SshKeyUnusableError for an
  /// explicit key that cannot be used or an agent that does not answer, SshAuthenticationError
  /// (tried(): what was looked at) when no key is found. What was skipped in the user's ssh_config
  /// goes to `warn`, when set. Reads key files and asks the agent for its keys: blocking, local.
  [[nodiscard]] static std::shared_ptr<const Signer> choose(const SshKeySource& source, const std::string& host,
                                                            const std::function<void(std::string_view)>& warn);

  virtual ~Signer() = default;
  /// The public key in the SSH wire format.
  [[nodiscard]] const std::string& public_key_blob() const noexcept { return public_key_blob_; }
  /// "SHA256:…", as ssh-keygen -l prints it.
  [[nodiscard]] const std::string& fingerprint() const noexcept { return fingerprint_; }
  /// Where the key is, for messages: a path, "private_key_pem" or "ssh-agent key <comment>".
  [[nodiscard]] const std::string& description() const noexcept { return description_; }
  /// The SSH signature blob over `data` (rsa-sha2-512 for RSA keys). Throws SshKeyUnusableError.
  [[nodiscard]] virtual std::string sign(std::string_view data) const = 0;
  /// The SSHSIG blob (sha512) over `message` in `name_space`, as `ssh-keygen -Y sign -n` makes.
  [[nodiscard]] std::string sshsig(std::string_view name_space, std::string_view message) const;

 protected:
  Signer(std::string public_key_blob, std::string description);

 private:
  std::string public_key_blob_;
  std::string fingerprint_;
  std::string description_;
};

}  // namespace exedev::ssh
