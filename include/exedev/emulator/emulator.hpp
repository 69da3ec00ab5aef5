#pragma once
// exedev::emulator: a local exe.dev. A real HTTPS server on loopback that speaks exe.dev's
// `POST /exec` protocol (docs/emulator.md). VMs are directories, their commands are real
// processes. Behaviours the specification leaves unknown are modes (modes.hpp), so a client
// can be tested against every plausible production behaviour.
//
// Thread safety: every member function may be called from any thread while the server runs on
// its own thread; those that read or change the state run on that thread (docs/emulator.md).

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <exedev/emulator/faults.hpp>
#include <exedev/emulator/modes.hpp>
#include <exedev/emulator/options.hpp>
#include <exedev/emulator/records.hpp>
#include <exedev/emulator/token_spec.hpp>

namespace exedev::emulator {

class Emulator {
 public:
  /// Starts the server on its own thread; returns once it listens. Throws std::runtime_error
  /// (or std::invalid_argument for a non-loopback host) if it cannot.
  explicit Emulator(Options options);
  /// With default options.
  Emulator();
  /// Stops the server, kills every VM process, removes a temporary state_dir.
  ~Emulator();
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  std::string url() const;                  ///< e.g. https://127.0.0.1:PORT
  std::uint16_t port() const;
  /// The loopback port where the emulator serves every VM's https_url (exe.dev's HTTPS proxy:
  /// https://<vm>.exe.xyz/ reaches the VM's proxy port, https://<vm>.exe.xyz:<3000-9999>/ that
  /// port). Connect there with the URL's host name (SNI and Host; the certificate, signed by
  /// ca_file(), covers *.exe.xyz), e.g. `curl --connect-to ::127.0.0.1:<this port>`. Public
  /// routes and share links (?share=<token>) get through; other requests get 401 (docs/emulator.md).
  /// 0 with Options::plain_http (no TLS, so no proxy).
  std::uint16_t vm_proxy_port() const;
  std::filesystem::path ca_file() const;    ///< PEM of the CA that signed the server cert
  std::filesystem::path state_dir() const;
  std::string token() const;                ///< all commands allowed, no tag scope
  /// The second account's all-commands token: its own VMs, SSH keys and email.
  std::string second_token() const;
  std::string control_secret() const;
  std::string issue_token(TokenSpec spec);  ///< a new exe1. token
  void revoke_token(const std::string& token);

  void inject(Fault fault);
  void clear_faults();
  Modes modes() const;
  void set_modes(Modes modes);

  std::vector<VMRecord> vms() const;
  std::optional<VMRecord> vm(const std::string& name) const;
  /// Process ids currently running for a VM (including detached ones).
  std::vector<int> vm_processes(const std::string& name) const;
  /// Stops (SIGSTOP) every process of VM `name` and returns once each has stopped (at most about
  /// 2 s), as `pause` does, but leaves the VM running and its SSH connections open: a test holds
  /// a VM still at a moment of its choosing (an upload's sftp-server mid-file, say). A `pause`
  /// and `resume` afterwards continue them; else they stay stopped until the VM goes. Returns
  /// how many processes were stopped.
  std::size_t stop_vm_processes(const std::string& name);
  /// Every /exec request that was read, in order. A request is recorded before the client can
  /// see the end of its response (or the connection reset), so it is here once a call returns.
  std::vector<CommandRecord> commands() const;
  void clear_commands();
  std::size_t connections_accepted() const;
  std::size_t open_connections() const;

  /// An OpenSSH known_hosts file with the one RSA host key of every SSH endpoint, for all the
  /// emulator's SSH names at any port (`[*.<domain>]:*,[<domain>]:*,[127.0.0.1]:* ssh-rsa …`);
  /// the key stays the same for every emulator on the same state_dir. Empty when this machine
  /// cannot serve SSH (no /usr/sbin/sshd): VMs then have no SSH endpoint. See docs/emulator.md,
  /// "SSH endpoints".
  std::filesystem::path ssh_known_hosts() const;
  /// Every connection to an SSH endpoint that got as far as its first key, in order: where it
  /// landed. Empty without SSH.
  std::vector<SshLanding> ssh_landings() const;
  /// A hosts(5) file naming 127.0.0.1 for every SSH name of the emulator (`<domain>` and
  /// `<vm>.<domain>`), rewritten as VMs come and go; pass it as SshOptions::hosts_file (or set
  /// EXE_SSH_HOSTS) so that the answers' `ssh_host` resolves without the system's resolver.
  /// Empty without SSH.
  std::filesystem::path ssh_hosts_file() const;

  /// Stops the server and starts it again on the same port, reloading VMs and tokens from
  /// state_dir as a fresh emulator process would: open connections and in-flight `ssh` streams
  /// are cut (no trailer), VM processes are killed, injected faults are dropped; command records,
  /// modes and the connection counters stay.
  void restart();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace exedev::emulator
