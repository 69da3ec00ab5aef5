#pragma once
// Where an SSH connection's settings come from (internal): the environment, the passwd entry and
// the user's ssh_config files, read here and decided by settle_connection()
// (connection_settings.hpp, sans-IO). Used by Connection::open, and by SandboxBackend to decide,
// before connecting, whether SSH can be tried at all.

#include "ssh/connection_settings.hpp"

#include <exedev/ssh/options.hpp>

#include <filesystem>
#include <optional>
#include <string>

namespace exedev::ssh {

/// $HOME, else the user's passwd entry, else "/".
[[nodiscard]] std::filesystem::path home_directory();

/// The settings of a connection to `endpoint`: reads the environment, the passwd entry and, when
/// SshOptions::use_config, the ssh_config file and what it includes. Never throws for a bad
/// user file: what it skipped goes to SshOptions::on_warning.
[[nodiscard]] ConnectionSettings connection_settings(const Endpoint& endpoint, const SshOptions& options);

/// nullopt when some key can be offered to `endpoint` (private_key_pem, an explicit key file, an
/// ssh_config IdentityFile or a default key file that exists, an agent socket when the agent is
/// used); else why none can. Tells on_warning nothing (Connection::open does).
[[nodiscard]] std::optional<std::string> missing_credentials(const Endpoint& endpoint, const SshOptions& options);

}  // namespace exedev::ssh
