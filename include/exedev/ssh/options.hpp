#pragma once
// Options of a direct SSH connection to a VM: which key authenticates, how the host key is
// verified, and the timeouts.

#include <exedev/coawait_guard.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace exedev {

/// What to do with the server's host key. Whatever the policy, a key marked @revoked in
/// known_hosts is refused, and nothing accepts any key by default.
enum class HostKeyPolicy {
  strict,      ///< only a key recorded in known_hosts for the host is accepted
  accept_new,  ///< a host's first key is recorded in known_hosts; a changed key is refused
  callback,    ///< a key that is not recorded as it is goes to host_key_callback, which decides
};

/// What a host key callback is asked about.
struct HostKeyCheck {
  std::string host;  ///< as the connection names it (no brackets, no port)
  std::uint16_t port = 22;
  std::string key_type;     ///< e.g. "ssh-ed25519"
  std::string fingerprint;  ///< "SHA256:<base64 without padding>", as ssh-keygen -l prints it
  std::optional<std::string> known_fingerprint;  ///< the recorded key of that type, when one is recorded for the host
};

struct SshOptions {
  /// An explicit private key file (else the EXE_SSH_KEY environment variable: a path).
  std::optional<std::filesystem::path> private_key_file{};
  /// The private key's text in memory (OpenSSH or PEM format); wins over private_key_file.
  std::optional<std::string> private_key_pem{};
  /// The explicit key's passphrase; never logged or put in a message.
  std::optional<std::string> passphrase{};
  /// Try the keys of the agent at SSH_AUTH_SOCK when no explicit key is given.
  bool use_agent = true;
  /// Tried after the agent when no explicit key is given; empty: ~/.ssh/id_ed25519, ~/.ssh/id_rsa
  /// (in that order). Missing files are skipped.
  std::vector<std::filesystem::path> default_key_files{};
  /// Empty: ~/.ssh/known_hosts.
  std::filesystem::path known_hosts_file{};
  /// A hosts(5) file consulted before the system resolver: a host name it lists connects to its
  /// address (the name itself is still what the host key is checked for). Empty: the
  /// EXE_SSH_HOSTS environment variable's path, else none. The emulator writes one for its SSH
  /// names (`exedev-emulator --print-env`, docs/emulator.md "SSH endpoints"). A file that cannot
  /// be read fails the connection (ConnectionError).
  std::filesystem::path hosts_file{};
  HostKeyPolicy host_key_policy = HostKeyPolicy::accept_new;
  /// For HostKeyPolicy::callback: true accepts the key (it is not recorded).
  std::function<bool(const HostKeyCheck&)> host_key_callback{};
  std::chrono::milliseconds connect_timeout{10000};    ///< resolving and connecting
  std::chrono::milliseconds handshake_timeout{10000};  ///< key exchange and host key check
  std::chrono::milliseconds auth_timeout{10000};       ///< authentication, all methods together
  /// An idle connection sends a keepalive this often (0: never).
  std::chrono::seconds keepalive_interval{15};
  /// Session channels (commands, SFTP) open at once per connection; OpenSSH's MaxSessions
  /// default. More work waits for a channel.
  std::size_t max_sessions = 10;
  EXEDEV_COAWAIT_GUARD;
};

}  // namespace exedev
