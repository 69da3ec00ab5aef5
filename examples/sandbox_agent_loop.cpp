// sandbox_agent_loop: what an agent runtime does with exedev::Sandbox, against an in-process
// emulator. Run 1 gets a new VM on its first workspace operation, runs commands and writes
// files; its ref is saved as JSON (as a runtime would store it with the message history).
// Run 2 attaches to the same VM by that ref and continues. Ending a run closes its client and
// keeps the VM; the program deletes it at the end.
//
// Against real exe.dev: drop the emulator and the client_options below; the client reads
// EXE_TOKEN.
#include <exedev/emulator/client_options.hpp>
#include <exedev/emulator/emulator.hpp>
#include <exedev/exedev.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <iostream>

namespace asio = boost::asio;
using exedev::workspace::Command;

// (Braced lists are built outside coroutines: GCC 12 rejects them inside.)
Command run_script() { return Command::argv({"sh", "src/main.sh"}); }

asio::awaitable<void> agent(const exedev::Sandbox& sandbox) {
  std::string saved_ref;
  // Run 1: a new VM, provisioned by the first workspace operation.
  co_await sandbox.with_run(std::nullopt, [&](exedev::SandboxRun& run) -> exedev::Task<void> {
    auto& ws = *run.workspace;
    std::cout << "run 1 works in " << co_await ws.working_dir() << "\n";
    co_await ws.write_text("plan.md", "1. write the code\n2. test it\n");
    co_await ws.write_text("src/main.sh", "echo \"hello from the agent's VM\"\n");
    const auto result = co_await ws.run(run_script());
    std::cout << "run 1: exit " << result.exit_code << ": " << exedev::workspace::printable_text(result.stdout_text);
    saved_ref = run.backend->ref()->to_json();
  });
  std::cout << "saved ref: " << saved_ref << "\n";

  // Run 2: the same VM, by ref.
  const auto ref = exedev::workspace::WorkspaceRef::from_json(saved_ref);
  co_await sandbox.with_run(ref, [&](exedev::SandboxRun& run) -> exedev::Task<void> {
    auto& ws = *run.workspace;
    std::cout << "run 2 reads plan.md:\n" << co_await ws.read_text("plan.md");
    for (const auto& entry : co_await ws.list_dir("."))
      std::cout << "  " << entry.name << (entry.is_dir ? "/" : "") << "\n";
    const auto result = co_await ws.run(Command::shell("sh src/main.sh | tr a-z A-Z"));
    std::cout << "run 2: " << exedev::workspace::printable_text(result.stdout_text);
  });

  std::cout << "deleted the VM: " << std::boolalpha << co_await sandbox.destroy(ref) << "\n";
}

int main() {
  try {
    exedev::emulator::Emulator emulator;
    exedev::SandboxOptions options;
    options.spec = exedev::VMSpec({.tags = {"examples"}, .working_dir = "app"});
    options.scope_tag = "agents";
    options.client_options = exedev::emulator::client_options(emulator);
    const exedev::Sandbox sandbox(options);

    asio::io_context io;
    std::exception_ptr failure;
    asio::co_spawn(io, agent(sandbox), [&](std::exception_ptr e) { failure = e; });
    io.run();
    if (failure) std::rethrow_exception(failure);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "sandbox_agent_loop failed: " << e.what() << "\n";
    return 1;
  }
}
