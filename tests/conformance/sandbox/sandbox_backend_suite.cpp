// SandboxBackend certified by the workspace conformance suite: every rule, every fixture.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>
#include <exedev/testing/conformance.hpp>

#include "support/sshd_server.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

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

// The client key the emulator accepts (ssh mode, minted credential), made once in a directory
// of its own that is removed at exit.
struct ClientKey {
  ClientKey() : directory(std::filesystem::temp_directory_path() / ("exedev-conformance-ssh-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(directory);
    key = exedev::test_support::make_key(directory, "client");
  }
  ~ClientKey() {
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
  }
  std::filesystem::path directory;
  exedev::test_support::KeyPair key;
};

const exedev::test_support::KeyPair& ssh_key() {
  static const ClientKey client;
  return client.key;
}

exedev::emulator::Emulator& emulator() {
  static exedev::emulator::Emulator instance([] {
    exedev::emulator::Options options;
    if (over_ssh() || minting()) options.ssh_authorized_keys.push_back(ssh_key().public_line());
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
  minted.key.private_key_file = ssh_key().private_key;
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
    o.ssh.private_key_file = ssh_key().private_key;
    o.ssh.use_agent = false;
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
