#pragma once
// Where the SSH keys come from (SshKeySource's order), without opening anything but the
// environment and file names (internal): used by Connection::open to authenticate, by
// SandboxBackend to decide, before connecting, whether SSH can be tried at all, and by the
// token signer (signer.hpp), so that a minted token and an SSH connection use the same keys.

#include <exedev/ssh/key_source.hpp>
#include <exedev/ssh/options.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace exedev::ssh {

/// A file's whole content, or the errno that stopped reading it.
struct FileText {
  std::string text;
  int error = 0;
};
[[nodiscard]] FileText read_text_file(const std::filesystem::path& path);

/// The key choice of an SSH connection's options.
[[nodiscard]] SshKeySource key_source_of(const SshOptions& options);

/// $HOME, else the user's passwd entry, else "/".
[[nodiscard]] std::filesystem::path home_directory();

/// The key files tried after the agent: SshKeySource::default_key_files, else ~/.ssh/id_ed25519
/// and ~/.ssh/id_rsa, in that order.
[[nodiscard]] std::vector<std::filesystem::path> default_key_files(const SshKeySource& source);

/// The explicit key file: SshKeySource::private_key_file, else the EXE_SSH_KEY path.
[[nodiscard]] std::optional<std::filesystem::path> explicit_key_file(const SshKeySource& source);

/// The agent's socket path (SSH_AUTH_SOCK) when use_agent and it is set.
[[nodiscard]] std::optional<std::string> agent_socket(const SshKeySource& source);

/// nullopt when some key can be offered (an explicit key, EXE_SSH_KEY, an agent socket when
/// use_agent, or a default key file that exists); else why none can.
[[nodiscard]] std::optional<std::string> missing_credentials(const SshKeySource& source);
[[nodiscard]] inline std::optional<std::string> missing_credentials(const SshOptions& options) {
  return missing_credentials(key_source_of(options));
}

}  // namespace exedev::ssh
