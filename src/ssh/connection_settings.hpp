#pragma once
// Everything a connection uses, decided once from the endpoint exe.dev named, SshOptions, the
// user's ssh_config and the local machine, sans-IO (key_sources.hpp gathers the inputs). The
// precedence, highest first: what the caller set in SshOptions (or the endpoint), then the
// environment variables the library documents, then ssh_config, then the defaults.

#include "ssh/connection.hpp"
#include "ssh/ssh_config.hpp"

#include <exedev/ssh/key_source.hpp>
#include <exedev/ssh/options.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace exedev::ssh {

/// What the local machine says.
struct LocalFacts {
  std::filesystem::path home;
  std::string user;        ///< the login name of the effective user (getpwuid(geteuid()))
  std::string host_name;   ///< gethostname
  std::optional<std::filesystem::path> exe_ssh_key;          ///< EXE_SSH_KEY
  std::optional<std::filesystem::path> exe_ssh_known_hosts;  ///< EXE_SSH_KNOWN_HOSTS
};

/// Which keys are offered, in this order: private_key_pem (the source's) or explicit_key_file
/// alone when either is set; else identity_files, the agent when use_agent, default_key_files.
/// One choice for an SSH connection and for a signature (src/ssh/signer).
struct KeyChoice {
  /// private_key_file, else EXE_SSH_KEY: used alone when set (as is private_key_pem).
  std::optional<std::filesystem::path> explicit_key_file;
  /// ssh_config IdentityFile, in order, tried first.
  std::vector<std::filesystem::path> identity_files;
  /// SshKeySource::use_agent, unless ssh_config says IdentitiesOnly yes.
  bool use_agent = true;
  /// SshKeySource::default_key_files; else, when ssh_config names no IdentityFile,
  /// ~/.ssh/id_ed25519 and ~/.ssh/id_rsa (OpenSSH's defaults give way to IdentityFile too).
  std::vector<std::filesystem::path> default_key_files;
};

/// The keys `source` offers to a host whose ssh_config is `config`; `tokens` expand its paths.
[[nodiscard]] KeyChoice settle_keys(const SshKeySource& source, const SshConfig& config, const LocalFacts& local,
                                    const PathTokens& tokens);

/// The key choice of an SSH connection's options (SshOptions has SshKeySource's fields).
[[nodiscard]] SshKeySource key_source_of(const SshOptions& options);

struct ConnectionSettings {
  /// host: ssh_config HostName, else the endpoint's; port: the endpoint's, else ssh_config Port,
  /// else 22; user: the endpoint's (exe.dev's ssh_user), else ssh_config User, else the local
  /// login name.
  Endpoint endpoint;
  /// The keys offered (settle_keys of key_source_of(options)).
  KeyChoice keys;
  /// SshOptions::known_hosts_file, else EXE_SSH_KNOWN_HOSTS, else ssh_config's first
  /// UserKnownHostsFile, else ~/.ssh/known_hosts.
  std::filesystem::path known_hosts_file;
  /// SshOptions::host_key_policy, else ssh_config StrictHostKeyChecking, else accept_new.
  HostKeyPolicy host_key_policy = HostKeyPolicy::accept_new;
};

[[nodiscard]] ConnectionSettings settle_connection(const Endpoint& endpoint, const SshOptions& options,
                                                   const SshConfig& config, const LocalFacts& local);

}  // namespace exedev::ssh
