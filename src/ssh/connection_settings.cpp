#include "ssh/connection_settings.hpp"

namespace exedev::ssh {

KeyChoice settle_keys(const SshKeySource& source, const SshConfig& config, const LocalFacts& local,
                      const PathTokens& tokens) {
  KeyChoice out;
  out.explicit_key_file = source.private_key_file ? source.private_key_file : local.exe_ssh_key;
  for (const auto& file : config.identity_files) out.identity_files.push_back(expand_config_path(file, tokens));
  out.use_agent = source.use_agent && !config.identities_only.value_or(false);
  if (!source.default_key_files.empty()) {
    out.default_key_files = source.default_key_files;
  } else if (config.identity_files.empty()) {
    out.default_key_files = {local.home / ".ssh" / "id_ed25519", local.home / ".ssh" / "id_rsa"};
  }
  return out;
}

SshKeySource key_source_of(const SshOptions& options) {
  SshKeySource source;
  source.private_key_file = options.private_key_file;
  source.private_key_pem = options.private_key_pem;
  source.passphrase = options.passphrase;
  source.use_agent = options.use_agent;
  source.default_key_files = options.default_key_files;
  source.use_config = options.use_config;
  source.config_file = options.config_file;
  return source;
}

ConnectionSettings settle_connection(const Endpoint& endpoint, const SshOptions& options, const SshConfig& config,
                                     const LocalFacts& local) {
  ConnectionSettings out;
  out.endpoint.host = config.host_name.value_or(endpoint.host);
  out.endpoint.port = endpoint.port != 0 ? endpoint.port : config.port.value_or(22);
  out.endpoint.user = !endpoint.user.empty() ? endpoint.user : config.user.value_or(local.user);

  const PathTokens tokens{local.home, local.user, local.host_name, out.endpoint.host, out.endpoint.user};
  out.keys = settle_keys(key_source_of(options), config, local, tokens);

  if (!options.known_hosts_file.empty()) out.known_hosts_file = options.known_hosts_file;
  else if (local.exe_ssh_known_hosts) out.known_hosts_file = *local.exe_ssh_known_hosts;
  else if (config.user_known_hosts_file) out.known_hosts_file = expand_config_path(*config.user_known_hosts_file, tokens);
  else out.known_hosts_file = local.home / ".ssh" / "known_hosts";
  out.host_key_policy = options.host_key_policy.value_or(config.host_key_policy.value_or(HostKeyPolicy::accept_new));
  return out;
}

}  // namespace exedev::ssh
