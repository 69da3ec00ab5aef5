// SandboxBackend certified by the workspace conformance suite: every rule, every fixture.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/emulator/records.hpp>
#include <exedev/exedev.hpp>
#include <exedev/testing/conformance.hpp>

#include <catch2/catch.hpp>

#include "support/sshd_server.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr const char* kScope = "conformance";

// The transport under test, from EXEDEV_CONFORMANCE_TRANSFER: "ssh" runs the suite over the
// emulator's sshd; every other configuration is /exec's.
bool over_ssh() {
  const char* value = std::getenv("EXEDEV_CONFORMANCE_TRANSFER");
  return value != nullptr && std::string(value) == "ssh";
}

// The credential under test, from EXEDEV_CONFORMANCE_CREDENTIAL: "minted" signs exe0 tokens with
// the key the emulator has registered (ClientOptions::minting), with no token and no EXE_TOKEN;
// else the emulator's token.
bool minting() {
  const char* value = std::getenv("EXEDEV_CONFORMANCE_CREDENTIAL");
  return value != nullptr && std::string(value) == "minted";
}

// The client keys of ssh mode, made once in a directory of their own that is removed at exit:
// the key the emulator's account registers, and an ssh-agent holding two keys of no account
// before it, as a user's agent with work keys does. The front lets every key in and the first
// one offered decides the landing, so the suite passes only if the backends offer the
// registered key alone (or prove the route before any work).
struct ClientKeys {
  ClientKeys() : directory(std::filesystem::temp_directory_path() / ("exedev-conformance-ssh-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(directory);
    ::unsetenv("EXE_SSH_KEY");  // an explicit key would be the only key offered
    registered = exedev::test_support::make_key(directory, "client");
    agent.emplace(directory, std::vector<exedev::test_support::KeyPair>{exedev::test_support::make_key(directory, "work"),
                                                                        exedev::test_support::make_key(directory, "other"),
                                                                        registered});
  }
  ~ClientKeys() {
    agent.reset();
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
  }
  std::filesystem::path directory;
  exedev::test_support::KeyPair registered;
  std::optional<exedev::test_support::Agent> agent;
};

const ClientKeys& ssh_keys() {
  static const ClientKeys keys;
  return keys;
}

exedev::emulator::Emulator& emulator() {
  static exedev::emulator::Emulator instance([] {
    exedev::emulator::Options options;
    if (over_ssh() || minting()) options.ssh_authorized_keys.push_back(ssh_keys().registered.public_line());
    return options;
  }());
  return instance;
}

exedev::ClientOptions client_options() {
  auto o = exedev::emulator::client_options(emulator());
  if (!minting()) return o;
  // No token anywhere: every request of the suite carries a token the client minted.
  o.token.reset();
  ::unsetenv("EXE_TOKEN");
  exedev::TokenMinting minted;
  minted.key.private_key_file = ssh_keys().registered.private_key;
  minted.key.use_agent = false;
  minted.key.use_config = false;  // the user's ~/.ssh/config must not change what a test does
  o.minting = minted;
  return o;
}

// The file-transfer configuration under test, from EXEDEV_CONFORMANCE_TRANSFER (one CTest entry
// each): default, window1, pacing, reference, compression_off, or ssh (the SSH transport).
void configure_transfer(exedev::SandboxBackendOptions& o) {
  const char* value = std::getenv("EXEDEV_CONFORMANCE_TRANSFER");
  const std::string mode = value ? value : "default";
  if (mode == "window1") {
    o.transfer.write_window = 1;
  } else if (mode == "compression_off") {
    o.transfer.compression = false;
  } else if (mode == "reference") {
    o.transfer.reference_mode = true;
  } else if (mode == "pacing") {
    // The pacing path with a bucket the suite does not wait on for long.
    o.client_options.rate_limit.pace_from_start = true;
    o.client_options.rate_limit.burst = 60;
    o.client_options.rate_limit.per_second = 200;
  } else if (mode == "ssh") {
    o.transport = exedev::Transport::ssh;
    // The agent's keys only: no explicit key, none of this machine's ~/.ssh keys.
    o.ssh.use_agent = true;
    o.ssh.default_key_files = {ssh_keys().directory / "no-such-key"};
    o.ssh.use_config = false;  // the user's ~/.ssh/config must not change what a test does
    o.ssh.known_hosts_file = emulator().ssh_known_hosts();
    o.ssh.hosts_file = emulator().ssh_hosts_file();
    o.ssh.host_key_policy = exedev::HostKeyPolicy::strict;
  } else if (mode != "default") {
    throw std::invalid_argument(
        "EXEDEV_CONFORMANCE_TRANSFER must be default, window1, pacing, reference, compression_off or ssh");
  }
  // Every /exec configuration pins its transport, whatever keys this machine has.
  if (mode != "ssh") o.transport = exedev::Transport::exec;
}

exedev::SandboxBackendOptions options(std::optional<exedev::workspace::WorkspaceRef> ref) {
  exedev::SandboxBackendOptions o;
  o.ref = std::move(ref);
  o.spec = exedev::VMSpec({.working_dir = "workspace"});
  o.scope_tag = kScope;
  o.client_options = client_options();
  configure_transfer(o);
  o.readiness.poll_interval = 100ms;
  return o;
}

// A backend that provisions its own VM on first use.
exedev::testing::BackendPtr provisioning(boost::asio::any_io_executor) {
  return std::make_shared<exedev::SandboxBackend>(options(std::nullopt));
}

}  // namespace

EXEDEV_BACKEND_SUITE(sandbox_backend_suite) {
  exedev::testing::BackendSuite suite;
  suite.name = "SandboxBackend";
  suite.backend = provisioning;
  suite.fresh_backend = provisioning;
  suite.destructive_backend = provisioning;
  // The emulator gives its VMs bash as their login shell when this machine has it, as exeuntu does.
  suite.shell_is_bash_login_shell = std::filesystem::exists("/bin/bash");
  suite.attach_backend = [](boost::asio::any_io_executor, const exedev::workspace::WorkspaceRef& ref) {
    return std::make_shared<exedev::SandboxBackend>(options(ref));
  };
  suite.destroy_environment = [](exedev::testing::BackendPtr backend) -> boost::asio::awaitable<void> {
    const auto ref = backend->ref();
    if (!ref) throw std::logic_error("destroy_environment: the backend has no environment yet");
    exedev::VMsOptions o;
    o.scope_tag = kScope;
    o.client_options = client_options();
    exedev::VMs vms(std::move(o));
    co_await vms.destroy(*ref);
    co_await vms.close();
  };
  return suite;
}

// Declared after the suite, so it runs after its rules (Catch2 runs test cases in declaration
// order): every connection the front saw over the whole suite landed on a VM of the account,
// whatever the agent's other keys.
TEST_CASE("SandboxBackend over SSH: no connection the front saw was misrouted", "[conformance]") {
  if (!over_ssh()) {
    WARN("skipped: EXEDEV_CONFORMANCE_TRANSFER is not ssh");
    return;
  }
  const auto landings = emulator().ssh_landings();
  if (landings.empty()) {
    WARN("skipped: no SSH connection was made before this check (it follows the suite's rules)");
    return;
  }
  std::size_t misrouted = 0;
  for (const auto& landing : landings) {
    // "first": the account of the emulator's token, whose one key is the registered one.
    const bool on_the_account = landing.decision != exedev::emulator::SshLandingDecision::lobby && landing.account == "first";
    if (!on_the_account) UNSCOPED_INFO("landed in the lobby or by another account's key: " << landing.fingerprint);
    misrouted += !on_the_account;
  }
  INFO(landings.size() << " connections");
  CHECK(misrouted == 0);
}
