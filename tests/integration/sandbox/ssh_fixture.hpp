#pragma once
// What the SandboxBackend-over-SSH tests share: an emulator that knows one client key, and
// backend options that use it with strict host key checking.
#include "fixture.hpp"
#include "support/sshd_server.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sbx {

namespace support = exedev::test_support;

inline exedev::workspace::Command sh_c(std::string line) {
  std::vector<std::string> argv{"sh", "-c"};
  argv.push_back(std::move(line));
  return exedev::workspace::Command::argv(std::move(argv));
}

// An emulator that knows one client key, and a second key it does not know.
struct SshSetup {
  SshSetup() : dir(std::filesystem::temp_directory_path() / ("exedev-ssh-transport-" + random_suffix())) {
    std::filesystem::create_directories(dir);
    registered = support::make_key(dir, "registered");
    stranger = support::make_key(dir, "stranger");
  }
  ~SshSetup() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  exedev::emulator::Options emulator_options() const {
    exedev::emulator::Options o;
    o.ssh_authorized_keys.push_back(registered.public_line());
    return o;
  }
  std::filesystem::path dir;
  support::KeyPair registered;
  support::KeyPair stranger;
};

// The lines a backend logs, for tests that look for one.
struct LogLines {
  std::vector<std::string> lines;
  exedev::Logger logger() {
    return [this](exedev::LogLevel, std::string_view line) { lines.emplace_back(line); };
  }
  [[nodiscard]] std::string all() const {
    std::string text;
    for (const auto& line : lines) text += line + "\n";
    return text;
  }
};

/// Waits until `condition` holds (polled every 20 ms); fails the test past `bound`.
inline Task<void> wait_until(std::function<bool()> condition, std::chrono::seconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!condition()) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    co_await sleep_for(20ms);
  }
}

inline exedev::SandboxBackendOptions ssh_options(Fixture& f, exedev::Transport transport, const support::KeyPair& key,
                                                 std::optional<exedev::workspace::WorkspaceRef> ref) {
  exedev::SandboxBackendOptions o;
  o.ref = std::move(ref);
  o.spec = f.spec({.working_dir = "work"});
  o.scope_tag = f.scope();
  o.client_options = f.client_options();
  o.readiness = f.readiness();
  o.transport = transport;
  o.ssh.private_key_file = key.private_key;
  o.ssh.use_agent = false;
  o.ssh.use_config = false;  // the user's ~/.ssh/config must not change what a test does
  o.ssh.known_hosts_file = f.emu().ssh_known_hosts();
  o.ssh.hosts_file = f.emu().ssh_hosts_file();  // the answers' SSH names, without the system's resolver
  o.ssh.host_key_policy = exedev::HostKeyPolicy::strict;
  return o;
}

}  // namespace sbx
