// The README's demo: drives a VM end to end on the bundled exe.dev emulator.
//
// 1. starts the emulator in-process (real HTTPS on loopback, its own CA);
// 2. a first agent "run" gets a workspace on a new VM: commands, files, a listing;
// 3. a second run reattaches to the same VM by its WorkspaceRef and continues;
// 4. outside any run, the VMs manager inspects, pauses, resumes and destroys the VM.
// Every step prints what it did; any failure exits non-zero.

#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>
#include <exedev/testing/run.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;
namespace ws = exedev::workspace;
using namespace std::chrono_literals;

namespace {

void step(const std::string& text) { std::printf("\n== %s\n", text.c_str()); }

void show(const ws::CommandResult& result) {
  std::printf("   exit %d\n", result.exit_code);
  if (!result.stdout_text.empty()) std::printf("   stdout: %s", result.stdout_text.c_str());
  if (!result.stderr_text.empty()) std::printf("   stderr: %s", result.stderr_text.c_str());
}

void expect(bool condition, const char* what) {
  if (!condition) throw std::runtime_error(std::string("demo check failed: ") + what);
}

}  // namespace

int main() try {
  exedev::emulator::Options emulator_options;
  emulator_options.modes.boot_delay = 1500ms;  // a new VM takes a moment before it runs commands
  exedev::emulator::Emulator emulator(emulator_options);
  std::printf("exe.dev emulator at %s (CA %s)\n", emulator.url().c_str(), emulator.ca_file().c_str());

  const auto client_options = exedev::emulator::client_options(emulator);

  exedev::Sandbox sandbox({.spec = exedev::VMSpec({.name = "demo-vm", .tags = {"demo"}, .working_dir = "app"}),
                           .scope_tag = "agents",
                           .client_options = client_options});

  exedev::testing::run(
      [&](asio::any_io_executor) -> asio::awaitable<void> {
        std::optional<ws::WorkspaceRef> ref;

        step("run 1: the first workspace operation provisions a VM and waits until it runs commands");
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
        });

        step("run 2: a new run reattaches to the same VM by its ref");
        co_await sandbox.with_run(ref, [&](exedev::SandboxRun& run) -> exedev::Task<void> {
          auto& workspace = *run.workspace;
          auto plan = co_await workspace.read_text("notes/plan.txt");
          std::printf("   notes/plan.txt: %s", plan.c_str());
          expect(plan == "1. look around\n2. write code\n", "the file survived between runs");
          auto blob = co_await workspace.read_bytes("data/blob.bin");
          expect(blob == std::string("\x00\x01\xfe\xff", 4), "binary bytes round-trip");
          // Built before co_await: GCC 12 miscompiles braced lists inside a co_await expression.
          const auto literal_argv = ws::Command::argv({"sh", "-c", "echo \"$1\"", "sh", "argv items stay literal: $HOME"});
          show(co_await workspace.run(literal_argv));
        });

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
      },
      exedev::testing::RunLimits{.deadline = 5min});

  step("what the emulator saw");
  std::printf("   %zu /exec requests over %zu TLS connections; %zu VMs left\n", emulator.commands().size(),
              emulator.connections_accepted(), emulator.vms().size());
  expect(emulator.vms().empty(), "no VM left behind");
  std::printf("\ndemo finished\n");
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "demo failed: %s\n", error.what());
  return 1;
}
