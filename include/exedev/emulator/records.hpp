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

struct CommandRecord {
  std::vector<std::string> words;  ///< the lexed command line (empty if it did not lex)
  std::string command;             ///< canonical command name, empty if unresolved
  std::string vm;                  ///< the VM it targets, if any
  unsigned http_status = 0;        ///< 0 = no response was sent (reset, stall, disconnect)
  std::optional<int> exit_code;    ///< ssh: the remote exit code if the command finished
  std::chrono::system_clock::time_point time;
};

}  // namespace exedev::emulator
