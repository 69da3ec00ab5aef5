#pragma once
// SshServer: the emulator's private OpenSSH sshd, configured as exe.dev's VMs configure theirs
// (exelet/fs/rovol/etc/ssh/sshd_config at 7524fcac: an ed25519 host key only, curve25519 key
// exchange, the same ciphers and MACs, AcceptEnv LANG LC_*, SetEnv PATH, TCP forwarding, the
// SFTP subsystem, MaxSessions left at its default) and listening on a loopback port that only
// the emulator's relay (ssh_endpoints.hpp) connects to.
//
// Everything lives in `<state_dir>/ssh/`: the host key (made once, so a new emulator on the same
// state has the same key), sshd_config, authorized_keys (the lobby's registered keys), the
// session wrapper sshd runs as ForceCommand, the routes the relay writes (`routes/<port>`: which
// VM a connection from that local port is for), sshd.log, and `home/`, an empty directory that is
// HOME for the shell sshd starts the wrapper with (so the user's startup files are not read).
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

  /// Prepares `<state_dir>/ssh/`: the host key (generated once with ssh-keygen), the wrapper,
  /// sshd_config with a free loopback port (with the SFTP subsystem when `sftp`). Starts nothing.
  /// Throws std::runtime_error naming what is missing when SSH cannot be served (no sshd, no
  /// ssh-keygen, a failed key).
  SshServer(const std::filesystem::path& state_dir, std::string login_shell, bool sftp);
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
  /// `ssh-ed25519 <base64>`.
  const std::string& host_public_key() const { return host_public_key_; }
  std::filesystem::path directory() const { return directory_; }
  std::filesystem::path config_file() const { return directory_ / "sshd_config"; }
  /// The route of a connection to sshd from 127.0.0.1:<local_port>.
  std::filesystem::path route_file(std::uint16_t local_port) const;

  /// A route file's text: the VM's home, the login shell and the session's environment, as
  /// shell assignments the wrapper sources.
  static std::string route_text(const std::filesystem::path& home, const std::string& login_shell,
                                const std::vector<std::string>& environment);

 private:
  void write_wrapper() const;
  void write_config() const;

  std::filesystem::path directory_;
  std::string login_shell_;
  bool sftp_ = true;
  std::string host_public_key_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace exedev::emulator
