#pragma once
// Where the SSH keys and a connection's settings come from (internal): the environment, the
// passwd entry and the user's ssh_config files, read here and decided by settle_connection() and
// settle_keys() (connection_settings.hpp, sans-IO). Used by Connection::open, by SandboxBackend to
// decide, before connecting, whether SSH can be tried at all, and by the token signer
// (signer.hpp), so that a minted token and an SSH connection choose keys alike.

#include "ssh/connection_settings.hpp"

#include <exedev/ssh/key_source.hpp>
#include <exedev/ssh/options.hpp>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace exedev::ssh {

/// A file's whole content, or the errno that stopped reading it.
struct FileText {
  std::string text;
  int error = 0;
};
[[nodiscard]] FileText read_text_file(const std::filesystem::path& path);

/// A key file's text when it can be tried, as the transport and the signer walk their key files;
/// else nullopt, with why in `tried` (unreadable; missing, when `named_in_config`: ssh_config's
/// IdentityFile named it; a missing default file is skipped silently).
[[nodiscard]] std::optional<std::string> key_file_text(const std::filesystem::path& path, bool named_in_config,
                                                       std::vector<std::string>& tried);

/// $HOME, else the user's passwd entry, else "/".
[[nodiscard]] std::filesystem::path home_directory();

/// SSH_AUTH_SOCK, when it is set.
[[nodiscard]] std::optional<std::string> agent_socket();

/// The settings of a connection to `endpoint`: reads the environment, the passwd entry and, when
/// SshOptions::use_config, the ssh_config file and what it includes. Never throws for a bad
/// user file: what it skipped goes to SshOptions::on_warning.
[[nodiscard]] ConnectionSettings connection_settings(const Endpoint& endpoint, const SshOptions& options);

/// The keys `source` offers to `host`, chosen as connection_settings() chooses a connection's
/// (the same reads, ssh_config's section for `host` included; settle_keys). What was skipped in
/// the user's files goes to `warn`, when set.
[[nodiscard]] KeyChoice key_choice(const SshKeySource& source, const std::string& host,
                                   const std::function<void(std::string_view)>& warn);

/// nullopt when some key can be offered to `endpoint` (private_key_pem, an explicit key file, an
/// ssh_config IdentityFile or a default key file that exists, an agent socket when the agent is
/// used); else why none can. Tells on_warning nothing (Connection::open does).
[[nodiscard]] std::optional<std::string> missing_credentials(const Endpoint& endpoint, const SshOptions& options);

}  // namespace exedev::ssh
