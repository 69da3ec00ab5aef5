#pragma once
// What the emulator reports of its state: its VMs, and every /exec command it received.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace exedev::emulator {

struct VMRecord {
  std::string name;
  std::string status;  ///< creating, running, paused
  std::vector<std::string> tags;
  std::string comment;
  std::string image;
  std::filesystem::path dir;   ///< the VM's directory
  std::filesystem::path home;  ///< HOME and cwd of its commands
  std::chrono::system_clock::time_point created_at;
  unsigned cpus = 2;
  std::uint64_t memory_bytes = 0;
  std::uint64_t disk_bytes = 0;
  std::vector<std::string> env;  ///< KEY=VALUE from `new --env`
  std::vector<std::string> integrations;
  bool standalone = false;
  std::string egress;  ///< "all" or "integrations"
};

/// Where exe.dev's front sent a connection to an SSH endpoint, decided by the first key the
/// client offered (docs/emulator.md, "SSH endpoints").
enum class SshLandingDecision {
  vm,           ///< the key's account's VM at that endpoint (or named by `vm+<name>`)
  vm_starting,  ///< that VM, still booting: accepted, then the connection closes
  lobby,        ///< the lobby shell: an unregistered key, or no VM of the account there
  denied,       ///< ended at authentication: `vm+` for a VM the key may not reach, or a stopped VM
};

struct SshLanding {
  std::uint16_t endpoint_port = 0;  ///< the endpoint the client connected to
  std::string fingerprint;          ///< `SHA256:…` of the first key the client offered
  std::string username;             ///< as the client sent it
  std::string account;              ///< the key's account ("first", "second"); empty: unregistered
  SshLandingDecision decision = SshLandingDecision::lobby;
  std::string vm;                   ///< the VM landed on or denied; empty for the lobby
  /// A denial's text as exe.dev's banner says it (`Access denied for VM "x".`, `VM "x" is not
  /// running.`). OpenSSH's sshd cannot send a banner chosen after the key, so the emulator's
  /// client never sees it; it is recorded here.
  std::string message;
};

struct CommandRecord {
  std::vector<std::string> words;  ///< the lexed command line (empty if it did not lex)
  std::string command;             ///< canonical command name, empty if unresolved
  std::string vm;                  ///< the VM it targets, if any
  unsigned http_status = 0;        ///< 0 = no response was sent (reset, stall, disconnect)
  std::optional<int> exit_code;    ///< ssh: the remote exit code if the command finished
  std::chrono::system_clock::time_point time;
};

}  // namespace exedev::emulator
