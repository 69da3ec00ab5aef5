// The README's demo: drives a VM end to end on the bundled exe.dev emulator.
//
// 1. starts the emulator in-process (real HTTPS on loopback, its own CA, and each VM's SSH
//    endpoint served by OpenSSH's sshd), registering an SSH key: `--ssh-key=PATH` (its PATH.pub),
//    else one made for the demo. That key is the only credential: the client signs its API
//    tokens with it (exe0 tokens, ClientOptions::minting) and the SSH transport logs in with it;
// 2. a first agent "run" gets a workspace on a new VM over SSH: commands, files, a listing;
// 3. a second run reattaches to the same VM by its WorkspaceRef over exe.dev's /exec API;
// 4. outside any run, the VMs manager inspects, pauses, resumes and destroys the VM.
// Every step prints what it did; any failure exits non-zero.

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <unistd.h>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using namespace std::chrono_literals;

namespace {

void step(const std::string& text) { std::printf("\n== %s\n", text.c_str()); }

void show(const ws::CommandResult& result) {
  std::printf("   exit %d\n", result.exit_code);
  if (!result.stdout_text.empty()) std::printf("   stdout: %s", ws::printable_text(result.stdout_text).c_str());
  if (!result.stderr_text.empty()) std::printf("   stderr: %s", ws::printable_text(result.stderr_text).c_str());
}

void expect(bool condition, const char* what) {
  if (!condition) throw std::runtime_error(std::string("demo check failed: ") + what);
}

// An ed25519 key pair made with ssh-keygen in `directory` (the demo's own; yours is registered
// with exe.dev once: `ssh exe.dev ssh-key add '<public key>'`).
std::filesystem::path make_demo_key(const std::filesystem::path& directory) {
  const auto key = directory / "id_ed25519";
  const std::string command = "ssh-keygen -q -t ed25519 -N '' -C exedev-demo -f '" + key.string() + "'";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("ssh-keygen failed (is openssh-client installed?)");
  return key;
}

std::string first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Both runs and the lifecycle calls, as one coroutine on the demo's io_context.
asio::awaitable<void> drive(exedev::Sandbox& sandbox, exedev::Sandbox& over_exec, exedev::emulator::Emulator& emulator) {
  std::optional<ws::WorkspaceRef> ref;

  step("run 1 (over SSH): the first operation provisions a VM through /exec, then works over SSH");
  std::size_t requests = 0;
  co_await sandbox.with_run(std::nullopt, [&](exedev::SandboxRun& run) -> exedev::Task<void> {
    auto& workspace = *run.workspace;
    std::printf("   working dir: %s\n", (co_await workspace.working_dir()).c_str());
    ref = run.backend->ref();
    std::printf("   ref: %s\n", ref->to_json().c_str());

    co_await workspace.write_text("notes/plan.txt", "1. look around\n2. write code\n");
    co_await workspace.write_bytes("data/blob.bin", std::string("\x00\x01\xfe\xff", 4));
    auto result = co_await workspace.run(ws::Command::shell("wc -l notes/plan.txt; echo to-stderr >&2; exit 3"));
    show(result);
    expect(result.exit_code == 3 && result.stderr_text == "to-stderr\n", "exit code and stderr");

    for (const auto& entry : co_await workspace.list_dir(".")) {
      std::printf("   %s %s\n", entry.is_dir ? "dir " : "file", entry.name.c_str());
    }
    expect(run.backend->transport_in_use() == exedev::Transport::ssh, "run 1 went over SSH");
    requests = emulator.commands().size();
  });
  std::printf("   /exec requests so far: %zu (provisioning only: the run's commands and files went over SSH)\n", requests);

  step("run 2 (over /exec): a new run reattaches to the same VM by its ref");
  co_await over_exec.with_run(ref, [&](exedev::SandboxRun& run) -> exedev::Task<void> {
    auto& workspace = *run.workspace;
    auto plan = co_await workspace.read_text("notes/plan.txt");
    std::printf("   notes/plan.txt: %s", plan.c_str());
    expect(plan == "1. look around\n2. write code\n", "the file survived between runs");
    auto blob = co_await workspace.read_bytes("data/blob.bin");
    expect(blob == std::string("\x00\x01\xfe\xff", 4), "binary bytes round-trip");
    // A braced argv is safe inside co_await with GCC 12 too: Command::argv takes a StringList.
    show(co_await workspace.run(ws::Command::argv({"sh", "-c", "echo \"$1\"", "sh", "argv items stay literal: $HOME"})));
    expect(run.backend->transport_in_use() == exedev::Transport::exec, "run 2 went over /exec");
  });
  std::printf("   /exec requests of run 2: %zu\n", emulator.commands().size() - requests);

  step("outside a run: inspect, pause, resume, destroy");
  auto vms = sandbox.vms();
  auto state = co_await vms.inspect(*ref);
  std::printf("   %s is %s\n", state.name.c_str(), state.status.raw.c_str());
  state = co_await vms.pause(*ref);
  std::printf("   paused: %s\n", state.status.raw.c_str());
  state = co_await vms.resume(*ref);
  std::printf("   resumed: %s\n", state.status.raw.c_str());
  const bool deleted = co_await vms.destroy(*ref);
  std::printf("   destroyed: %s\n", deleted ? "yes" : "no");
  expect(deleted, "destroy deleted the VM");
  co_await vms.close();
}

// `--ssh-key=PATH` or `--ssh-key PATH`, else nullopt; anything else is a usage error.
std::optional<std::filesystem::path> key_argument(int argc, char** argv) {
  const std::string_view flag = "--ssh-key";
  if (argc == 1) return std::nullopt;
  const std::string_view first = argv[1];
  if (argc == 2 && first.size() > flag.size() + 1 && first.substr(0, flag.size() + 1) == "--ssh-key=") {
    return std::filesystem::path(first.substr(flag.size() + 1));
  }
  if (argc == 3 && first == flag) return std::filesystem::path(argv[2]);
  throw std::invalid_argument("usage: demo [--ssh-key=PATH]  (PATH.pub beside the private key)");
}

}  // namespace

int main(int argc, char** argv) try {
  const auto key_dir = std::filesystem::temp_directory_path() / ("exedev-demo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(key_dir);
  const auto given_key = key_argument(argc, argv);
  const auto key = given_key ? *given_key : make_demo_key(key_dir);
  const auto public_line = first_line(key.string() + ".pub");
  if (public_line.empty()) throw std::runtime_error("cannot read the public key " + key.string() + ".pub");
  // No API token anywhere: the emulator's own is not used, nor an EXE_TOKEN of yours.
  ::unsetenv("EXE_TOKEN");

  exedev::emulator::Options emulator_options;
  emulator_options.modes.boot_delay = 1500ms;  // a new VM takes a moment before it runs commands
  emulator_options.ssh_authorized_keys.push_back(public_line);  // as `ssh exe.dev ssh-key add` does
  exedev::emulator::Emulator emulator(emulator_options);
  std::printf("exe.dev emulator at %s (CA %s)\n", emulator.url().c_str(), emulator.ca_file().c_str());

  auto client_options = exedev::emulator::client_options(emulator);
  client_options.token.reset();
  exedev::TokenMinting minting;  // exe0 tokens signed with the key, each for 5 minutes
  minting.key.private_key_file = key;
  client_options.minting = minting;
  std::printf("credential: the SSH key %s alone (API tokens minted with it; no EXE_TOKEN)\n", key.c_str());
  exedev::SandboxOptions options{.spec = exedev::VMSpec({.name = "demo-vm", .tags = {"demo"}, .working_dir = "app"}),
                                 .scope_tag = "agents",
                                 .client_options = client_options};
  options.ssh.private_key_file = key;
  options.ssh.known_hosts_file = emulator.ssh_known_hosts();  // the emulator's host keys, checked strictly
  options.ssh.hosts_file = emulator.ssh_hosts_file();         // its SSH names, resolved to 127.0.0.1
  options.ssh.host_key_policy = exedev::HostKeyPolicy::strict;
  options.logger = [](exedev::LogLevel, std::string_view line) {
    std::printf("   [log] %.*s\n", static_cast<int>(line.size()), line.data());
  };
  exedev::Sandbox sandbox(options);  // transport: automatic (SSH, since a key is registered)
  options.transport = exedev::Transport::exec;
  exedev::Sandbox over_exec(options);

  asio::io_context io;
  std::exception_ptr failure;
  asio::co_spawn(io, drive(sandbox, over_exec, emulator), [&](std::exception_ptr e) { failure = e; });
  io.run();
  if (failure) std::rethrow_exception(failure);

  step("what the emulator saw");
  std::printf("   %zu /exec requests over %zu TLS connections; %zu VMs left\n", emulator.commands().size(),
              emulator.connections_accepted(), emulator.vms().size());
  expect(emulator.vms().empty(), "no VM left behind");
  std::filesystem::remove_all(key_dir);
  std::printf("\ndemo finished\n");
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "demo failed: %s\n", error.what());
  return 1;
}
