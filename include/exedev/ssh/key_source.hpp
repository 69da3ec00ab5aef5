#pragma once
// Which SSH key signs: for an SSH connection (SshOptions has the same fields) and for the exe0
// tokens a Client mints (TokenMinting::key). One choice for both (src/ssh/key_sources,
// src/ssh/connection_settings), ~/.ssh/config included.

#include <exedev/coawait_guard.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace exedev {

/// Keys are chosen in this order: private_key_pem, else private_key_file, else the path in
/// EXE_SSH_KEY (an explicit key is the only one offered); without any of them, the IdentityFile
/// keys the user's ssh_config names for the host (when use_config), the ssh-agent at
/// SSH_AUTH_SOCK (when use_agent, and unless ssh_config says IdentitiesOnly yes), then the
/// default key files that exist and are not encrypted. A token is minted with the first key
/// found (an agent's first key of a usable type); an SSH connection tries them in turn.
struct SshKeySource {
  /// An explicit private key file (else the EXE_SSH_KEY environment variable: a path).
  std::optional<std::filesystem::path> private_key_file{};
  /// The private key's text in memory (OpenSSH, PEM or PKCS#8); wins over private_key_file.
  std::optional<std::string> private_key_pem{};
  /// The explicit key's passphrase; never logged or put in a message.
  std::optional<std::string> passphrase{};
  /// Use the keys of the agent at SSH_AUTH_SOCK when no explicit key is given, after ssh_config's
  /// IdentityFile keys (never when ssh_config says IdentitiesOnly yes).
  bool use_agent = true;
  /// Tried after the agent when no explicit key is given; empty: ~/.ssh/id_ed25519, ~/.ssh/id_rsa
  /// (in that order), unless ssh_config names an IdentityFile for the host. Missing files are
  /// skipped.
  std::vector<std::filesystem::path> default_key_files{};
  /// Read the user's ssh_config for the host (IdentityFile, IdentitiesOnly, with Host, Match and
  /// Include), as an SSH connection does (SshOptions::use_config).
  bool use_config = true;
  /// Empty: ~/.ssh/config. A missing file is no configuration.
  std::filesystem::path config_file{};
  EXEDEV_COAWAIT_GUARD;
};

}  // namespace exedev
