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
#include <string_view>
#include <vector>

namespace exedev {

/// What to do with the server's host key. Whatever the policy, a key marked @revoked in
/// known_hosts for the host is refused, and nothing accepts any key by default.
enum class HostKeyPolicy {
  strict,      ///< only a key recorded in known_hosts for the host is accepted
  accept_new,  ///< a host's first key is recorded in known_hosts (one line for its domain, docs/ssh.md); a changed key is refused
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

/// How the SSH transport recovers from failures (docs/sandbox.md, "Recovery over SSH"): the
/// limits of SandboxBackend's route policy (src/sandbox/route_recovery.hpp) and of a
/// connection's channel openings. Every retry waits `first` doubled after each attempt, at most
/// `cap`.
struct SshRecoveryOptions {
  /// Connection attempts of one operation when the connection drops or an opening fails
  /// (the first included). A connection that dropped under an operation is reopened at once;
  /// a failed opening is tried again after reconnect_delay (doubled each time).
  int reconnect_attempts = 3;
  std::chrono::milliseconds reconnect_delay{500};
  std::chrono::milliseconds reconnect_delay_cap{4000};
  /// sshd frees a closed session only once it has processed the close, so a session channel
  /// opened right after another closed may be refused (MaxSessions) for a moment: the opening
  /// is tried again, after channel_retry_delay (doubled) or when another channel closes, for
  /// this long.
  std::chrono::milliseconds channel_refusal_patience{30000};
  std::chrono::milliseconds channel_retry_delay{5};
  std::chrono::milliseconds channel_retry_delay_cap{500};
  /// An endpoint whose connect (or handshake) timed out is not tried again for this long by
  /// backends that share one SshEndpointMemory (a Sandbox's runs): `automatic` uses /exec
  /// meanwhile, `ssh` fails at once. 0: not remembered.
  std::chrono::milliseconds unanswered_memory{60000};
};

/// Options of a connection. Where a field is left unset, the user's ssh_config for the host
/// decides (docs/ssh.md, "~/.ssh/config"), then the default.
struct SshOptions {
  /// An explicit private key file (else the EXE_SSH_KEY environment variable: a path). An
  /// explicit key is the only key offered.
  std::optional<std::filesystem::path> private_key_file{};
  /// The private key's text in memory (OpenSSH or PEM format); wins over private_key_file.
  std::optional<std::string> private_key_pem{};
  /// The explicit key's passphrase; never logged or put in a message.
  std::optional<std::string> passphrase{};
  /// Try the keys of the agent at SSH_AUTH_SOCK when no explicit key is given, after ssh_config's
  /// IdentityFile keys (never when ssh_config says IdentitiesOnly yes).
  bool use_agent = true;
  /// Tried after the agent when no explicit key is given; empty: ~/.ssh/id_ed25519, ~/.ssh/id_rsa
  /// (in that order), unless ssh_config names an IdentityFile for the host. Missing files are
  /// skipped.
  std::vector<std::filesystem::path> default_key_files{};
  /// Empty: the EXE_SSH_KNOWN_HOSTS environment variable (a path; the emulator prints it), else
  /// ssh_config's UserKnownHostsFile (its first file), else ~/.ssh/known_hosts.
  std::filesystem::path known_hosts_file{};
  /// A hosts(5) file consulted before the system resolver: a host name it lists connects to its
  /// address (the name itself is still what the host key is checked for). Empty: the
  /// EXE_SSH_HOSTS environment variable's path, else none. The emulator writes one for its SSH
  /// names (`exedev-emulator --print-env`, docs/emulator.md "SSH endpoints"). A file that cannot
  /// be read fails the connection (ConnectionError).
  std::filesystem::path hosts_file{};
  /// Unset: ssh_config's StrictHostKeyChecking (yes, ask: strict; accept-new, and also no, which
  /// never turns checking off here: accept_new), else accept_new.
  std::optional<HostKeyPolicy> host_key_policy{};
  /// For HostKeyPolicy::callback: true accepts the key (it is not recorded).
  std::function<bool(const HostKeyCheck&)> host_key_callback{};
  /// Read the user's ssh_config for the host (HostName, User, Port, IdentityFile,
  /// IdentitiesOnly, UserKnownHostsFile, StrictHostKeyChecking, with Host, Match and Include).
  bool use_config = true;
  /// Empty: ~/.ssh/config. A missing file is no configuration.
  std::filesystem::path config_file{};
  /// Told, one line each, what was skipped in the user's files (a known_hosts or ssh_config line
  /// that cannot be used, a Match block not evaluated), naming file and line number, never a
  /// line's content. Unset: SandboxBackend passes these to its logger (warning); else dropped.
  std::function<void(std::string_view)> on_warning{};
  std::chrono::milliseconds connect_timeout{10000};    ///< resolving and connecting
  std::chrono::milliseconds handshake_timeout{10000};  ///< key exchange and host key check
  std::chrono::milliseconds auth_timeout{10000};       ///< authentication, all methods together
  /// An idle connection sends a keepalive this often (0: never).
  std::chrono::seconds keepalive_interval{15};
  /// Session channels (commands, SFTP) open at once per connection; OpenSSH's MaxSessions
  /// default. More work waits for a channel.
  std::size_t max_sessions = 10;
  /// The deadline of each step of a file or tree operation (SandboxBackend): a script (a read
  /// page, a listing, an archive, a chunk) is stopped past it, its process group killed on the
  /// VM and its channel closed, as exe.dev's /exec ends a request at 30 s; an SFTP transfer gets
  /// it plus 1 s per MiB of the file. 0: no deadline.
  std::chrono::milliseconds file_operation_timeout{60000};
  SshRecoveryOptions recovery{};
  EXEDEV_COAWAIT_GUARD;
};

}  // namespace exedev
