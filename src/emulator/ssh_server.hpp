#pragma once
// SshServer: the emulator's private OpenSSH sshd. Its transport and authentication are exe.dev's
// front (the SSH proxy before every VM: one RSA-2048 host key with a host certificate signed by
// the emulator's SSH CA, x/crypto/ssh's algorithms); its channel layer is exe.dev's VM sshd
// (exelet/fs/rovol/etc/ssh/sshd_config at 7524fcac: AcceptEnv LANG LC_*, SetEnv PATH, forwarding,
// the SFTP subsystem, MaxSessions left at its default). It listens on a loopback port that only
// the emulator's relay (ssh_endpoints.hpp) connects to. docs/adr/0014-emulator-ssh-front.md.
//
// Everything lives in `<state_dir>/ssh/`: the host key and the CA key (made once, so a new
// emulator on the same state has the same keys), the host certificate, sshd_config, the key
// script `land` sshd runs for every offered key (AuthorizedKeysCommand: it routes the connection
// by the key through the landing table `landing/` the lobby writes, and appends its decision to
// `landings.log`), the session wrapper sshd runs as ForceCommand, the files of each connection
// (`connections/<relay port>`: the endpoint port it came in on, written by the relay;
// `routes/<relay port>`: where it landed, written by the key script), sshd.log, and `home/`, an
// empty directory that is HOME for the shell sshd starts the wrapper with (so the user's
// startup files are not read).
// Blocking; no Asio.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace exedev::emulator {

class SshServer {
 public:
  /// Where sshd and sftp-server are (Debian's openssh-server).
  static constexpr const char* sshd_program = "/usr/sbin/sshd";
  static constexpr const char* sftp_server_program = "/usr/lib/openssh/sftp-server";

  /// Prepares `<state_dir>/ssh/`: the host and CA keys (generated once with ssh-keygen), the host
  /// certificate for `domain`, `*.<domain>`, 127.0.0.1 and localhost, the wrapper, sshd_config
  /// with a free loopback port (with the SFTP subsystem when `sftp`). Starts nothing. Throws
  /// std::runtime_error naming what is missing when SSH cannot be served (no sshd, no
  /// ssh-keygen, a failed key).
  SshServer(const std::filesystem::path& state_dir, std::string login_shell, bool sftp, std::string domain);
  /// stop().
  ~SshServer();
  SshServer(const SshServer&) = delete;
  SshServer& operator=(const SshServer&) = delete;

  /// Starts sshd unless it runs; returns at once (it listens a moment later: a connect is
  /// refused until then). Throws std::runtime_error when it cannot be started.
  void ensure_running();
  /// Whether the sshd started last still runs.
  bool running();
  /// Stops sshd and every process of it (connections being served), and reaps it.
  void stop();

  std::uint16_t port() const { return port_; }
  const std::string& login_shell() const { return login_shell_; }
  /// `ssh-rsa <base64>`.
  const std::string& host_public_key() const { return host_public_key_; }
  /// The SSH CA that signed the host certificate: `ssh-ed25519 <base64>`.
  const std::string& ca_public_key() const { return ca_public_key_; }
  const std::string& domain() const { return domain_; }
  std::filesystem::path host_key_file() const { return directory_ / "ssh_host_rsa_key"; }
  std::filesystem::path host_certificate_file() const { return directory_ / "ssh_host_rsa_key-cert.pub"; }
  std::filesystem::path ca_key_file() const { return directory_ / "ssh_ca_key"; }
  std::filesystem::path directory() const { return directory_; }
  std::filesystem::path config_file() const { return directory_ / "sshd_config"; }
  /// The known_hosts text for every endpoint: the plain host key for the emulator's SSH names at
  /// any port, `[*.<domain>]:*,[<domain>]:*,[127.0.0.1]:* ssh-rsa …`.
  std::string known_hosts_text() const;
  /// What `GET /.well-known/ssh-known-hosts` answers, as exe.dev's knownHostsLine shapes it:
  /// `@cert-authority <domain>,*.<domain>,[<domain>]:*,[*.<domain>]:* <CA key> <domain> ssh ca`.
  std::string cert_authority_line() const;

  /// The route of a connection to sshd from 127.0.0.1:<local_port>, written by the key script
  /// when it decides where the connection lands (`<route>.key` holds the deciding key's
  /// fingerprint); the session wrapper sources it.
  std::filesystem::path route_file(std::uint16_t local_port) const;
  /// The endpoint port a connection to sshd from 127.0.0.1:<local_port> came in on, written by
  /// the relay before it connects, for the key script.
  std::filesystem::path connection_file(std::uint16_t local_port) const;
  /// Where the key script appends one line per decision (SshLanding, read by ssh_landings()).
  std::filesystem::path landings_file() const { return directory_ / "landings.log"; }
  std::filesystem::path key_script_file() const { return directory_ / "land"; }
  /// The hosts(5) file of the emulator's SSH names: a link to the landing table's `hosts`.
  std::filesystem::path hosts_file() const { return directory_ / "hosts"; }
  /// The shim sshd is started with (LD_PRELOAD) to take any login name (any_user_shim.hpp).
  std::filesystem::path shim_file() const { return directory_ / "any_user.so"; }

 private:
  void write_wrapper() const;
  void write_key_script() const;
  void write_config() const;

  std::filesystem::path directory_;
  std::string login_shell_;
  bool sftp_ = true;
  std::string domain_;
  std::string host_public_key_;
  std::string ca_public_key_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace exedev::emulator
