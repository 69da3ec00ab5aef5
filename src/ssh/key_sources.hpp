#pragma once
// Where an SSH connection's keys and known hosts come from, without opening anything but the
// environment and file names (internal): used by Connection::open to authenticate and by
// SandboxBackend to decide, before connecting, whether SSH can be tried at all.

#include <exedev/ssh/options.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace exedev::ssh {

/// $HOME, else the user's passwd entry, else "/".
[[nodiscard]] std::filesystem::path home_directory();

/// The key files tried after the agent: SshOptions::default_key_files, else ~/.ssh/id_ed25519
/// and ~/.ssh/id_rsa, in that order.
[[nodiscard]] std::vector<std::filesystem::path> default_key_files(const SshOptions& options);

/// The explicit key file: SshOptions::private_key_file, else the EXE_SSH_KEY path.
[[nodiscard]] std::optional<std::filesystem::path> explicit_key_file(const SshOptions& options);

/// nullopt when some key can be offered (an explicit key, EXE_SSH_KEY, an agent socket when
/// use_agent, or a default key file that exists); else why none can.
[[nodiscard]] std::optional<std::string> missing_credentials(const SshOptions& options);

}  // namespace exedev::ssh
