#pragma once
// How an Emulator is started: where its state lives, its address, tokens and modes.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <exedev/coawait_guard.hpp>
#include <exedev/emulator/modes.hpp>
#include <exedev/emulator/token_spec.hpp>

namespace exedev::emulator {

struct Options {
  /// VMs live here (one directory each, metadata in emulator-state.json). Empty = a fresh temporary
  /// directory removed on destruction. A new Emulator on the same directory sees the same VMs
  /// and accepts the same tokens.
  std::filesystem::path state_dir{};
  std::string host = "127.0.0.1";  ///< a loopback address only ("127.x.y.z", "::1", "localhost").
  std::uint16_t port = 0;          ///< 0 = pick a free port.
  bool plain_http = false;         ///< debugging only: no TLS.
  /// Tests only: serve a certificate (signed by the emulator's CA) whose validity ended a day ago.
  bool expired_certificate = false;
  /// Secret of the control endpoint `POST /_emulator/…` (header X-Emulator-Control);
  /// empty = a random one (control_secret()).
  std::string control_secret{};
  /// The all-commands token; empty = a random one (persisted in state_dir).
  std::string token{};
  /// Extra tokens to accept (for a tokens file or the command line).
  std::map<std::string, TokenSpec> tokens{};
  /// The VM user's login shell: `ssh` command lines run as `<shell> -c <line>` with
  /// SHELL=<shell>, as sshd runs them. Empty = /bin/bash when this machine has it (exeuntu's
  /// login shell is bash), else /bin/sh.
  std::string login_shell{};
  /// SSH public keys (authorized_keys lines, e.g. the text of an `id_ed25519.pub`) registered at
  /// start, as `ssh-key add` registers them: they may log in to every VM's SSH endpoint.
  std::vector<std::string> ssh_authorized_keys{};
  /// The second account: its all-commands token (empty = persisted or random;
  /// Emulator::second_token()) and the SSH public keys registered to it at start. Each account
  /// has its own VMs, keys and email; every command acts within its token's account.
  std::string second_token{};
  std::vector<std::string> second_ssh_authorized_keys{};
  /// Whether the SSH endpoints serve the SFTP subsystem. Off, sshd refuses the subsystem
  /// request, as a server configured without `Subsystem sftp` does (tests of a client's
  /// fallback); commands, shells and forwarding are served as before.
  bool ssh_sftp = true;
  /// The domain of the emulator's SSH host names (exe.dev's `exe.xyz`): its host certificate
  /// names `<domain>` and `*.<domain>`, and `GET /.well-known/ssh-known-hosts` answers the
  /// `@cert-authority` line for them (docs/emulator.md, "SSH endpoints").
  std::string ssh_domain = "exe.localhost";
  Modes modes{};
  EXEDEV_COAWAIT_GUARD;
};

}  // namespace exedev::emulator
